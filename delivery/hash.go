package delivery

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/xconn/xconn/protocol"
)

// Content is the business content of a chat.message that decides between a
// duplicate and a conflict: the complete text and the complete file list
// (IM v2 §9).
type Content struct {
	Text  string
	Files []protocol.ChatFile
}

// ContentOf returns the Content of a chat.message payload.
func ContentOf(p *protocol.ChatMessagePayload) Content {
	return Content{Text: p.Text, Files: p.Files}
}

// ContentHash returns the canonical hash of c: SHA-256 over the text and, in
// order, every file's type, file_ref, filename, mime_type, byte_size,
// expires_at and download_url, each length-prefixed, as lowercase hex.
// Extension fields are not part of the content.
func ContentHash(c Content) string {
	h := sha256.New()
	var buf [8]byte
	str := func(s string) {
		binary.BigEndian.PutUint64(buf[:], uint64(len(s)))
		h.Write(buf[:])
		h.Write([]byte(s))
	}
	num := func(n int64) {
		binary.BigEndian.PutUint64(buf[:], uint64(n))
		h.Write(buf[:])
	}
	str(c.Text)
	num(int64(len(c.Files)))
	for _, f := range c.Files {
		str(string(f.Type))
		str(f.FileRef)
		str(f.Filename)
		str(f.MimeType)
		num(f.ByteSize)
		num(f.ExpiresAt)
		str(f.DownloadURL)
	}
	return hex.EncodeToString(h.Sum(nil))
}
