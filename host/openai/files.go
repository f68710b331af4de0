package openai

import (
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strings"

	"github.com/xconn/xconn/host"
)

// Defaults of the image bounds ([Options.MaxImageBytes], [Options.MaxImages]).
const (
	// DefaultMaxImageBytes bounds one image sent to the model (4 MiB
	// before base64); larger images are described by a note instead.
	DefaultMaxImageBytes = 4 << 20
	// DefaultMaxImages bounds the images of one model request.
	DefaultMaxImages = 4
)

// visionType reports whether vision models accept the image type as a
// data URL.
func visionType(mt string) bool {
	switch mt {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// imageBudget counts the images of one turn.
type imageBudget struct {
	left     int
	maxBytes int64
	off      bool // the model refused images: notes only
}

// fileNote describes a file to the model in one line, with the host's
// unified file_ref that tools taking an upload reference accept.
func fileNote(kind string, f host.File, extra string) string {
	name := f.Filename
	if name == "" {
		name = filepath.Base(f.Path)
	}
	mt := f.MimeType
	if mt == "" {
		mt = mime.TypeByExtension(filepath.Ext(name))
	}
	if mt == "" {
		mt = "application/octet-stream"
	}
	if f.Ref != "" {
		extra += ", file_ref " + f.Ref
	}
	return fmt.Sprintf("[%s: %s (%s, %s)%s]", kind, name, mt, humanSize(f.Size), extra)
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// imagePart reads f as a data URL when it is an image the model can see
// within the budget; ok is false otherwise.
func (b *imageBudget) imagePart(f host.File) (Part, bool) {
	mt, _, _ := mime.ParseMediaType(f.MimeType)
	if b.off || b.left <= 0 || !visionType(strings.ToLower(mt)) || f.Path == "" {
		return Part{}, false
	}
	fh, err := os.Open(f.Path)
	if err != nil {
		return Part{}, false
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, b.maxBytes+1))
	if err != nil || int64(len(data)) > b.maxBytes || len(data) == 0 {
		return Part{}, false
	}
	b.left--
	url := "data:" + strings.ToLower(mt) + ";base64," + base64.StdEncoding.EncodeToString(data)
	return Part{Type: "image_url", ImageURL: &ImageURL{URL: url}}, true
}

// withFiles returns the message to send (text, notes and image parts) and
// the one to remember (text and notes only) for a text and its files.
func (b *imageBudget) withFiles(role, text string, files []host.File) (send, remember Message) {
	var notes []string
	var images []Part
	for _, f := range files {
		if p, ok := b.imagePart(f); ok {
			images = append(images, p)
			notes = append(notes, fileNote("image", f, ""))
			continue
		}
		notes = append(notes, fileNote("file", f, ""))
	}
	full := text
	if len(notes) > 0 {
		if full != "" {
			full += "\n"
		}
		full += strings.Join(notes, "\n")
	}
	remember = Message{Role: role, Content: full}
	send = remember
	if len(images) > 0 {
		send.Parts = append([]Part{{Type: "text", Text: full}}, images...)
	}
	return send, remember
}
