package host

import (
	"container/list"
	"errors"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"sync"
)

// FileRefPrefix starts every unified file_ref the host hands out.
const FileRefPrefix = "hfile_"

// fileRegistry maps the host's unified file_refs (section 10, 8.19: what a
// model may see of a file) to local files, per user. It is bounded in
// entries and in the bytes of the files they name; the least recently used
// entries are forgotten first (the files stay until FileRetention removes
// them). Safe for concurrent use.
type fileRegistry struct {
	max      int
	maxBytes int64

	mu    sync.Mutex
	bytes int64
	refs  map[string]*list.Element // of *fileEntry
	lru   list.List                // most recently used at the front
}

type fileEntry struct {
	userID string
	f      File
}

func newFileRegistry(max int, maxBytes int64) *fileRegistry {
	return &fileRegistry{max: max, maxBytes: maxBytes, refs: map[string]*list.Element{}}
}

// add gives f a new unified file_ref owned by userID and returns f with it.
func (r *fileRegistry) add(userID string, f File) File {
	f.Ref = newID(FileRefPrefix)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refs[f.Ref] = r.lru.PushFront(&fileEntry{userID: userID, f: f})
	r.bytes += max(f.Size, 0)
	for r.lru.Len() > 1 && (r.lru.Len() > r.max || r.bytes > r.maxBytes) {
		e := r.lru.Back()
		old := e.Value.(*fileEntry)
		r.lru.Remove(e)
		delete(r.refs, old.f.Ref)
		r.bytes -= max(old.f.Size, 0)
	}
	return f
}

// get returns the file of ref when userID owns it.
func (r *fileRegistry) get(userID, ref string) (File, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.refs[ref]
	if !ok || e.Value.(*fileEntry).userID != userID {
		return File{}, false
	}
	r.lru.MoveToFront(e)
	return e.Value.(*fileEntry).f, true
}

// RegisterFile gives a local file of the embedder (for instance one the
// agent produced) a unified file_ref owned by userID, so that a model can
// pass it to a tool argument declared as an upload reference (see
// [FunctionDef.FileArgs]). The file is not copied: it must stay at
// f.Path until the call that uses it. Files the host downloads (those of a
// [UserMessage] and of a tool [Result]) are registered already.
func (h *Host) RegisterFile(userID string, f OutgoingFile) (File, error) {
	if userID == "" {
		return File{}, errors.New("host: register file: user id is required")
	}
	info, err := os.Stat(f.Path)
	if err != nil {
		return File{}, fmt.Errorf("host: register file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return File{}, fmt.Errorf("host: register file: %s is not a regular file", f.Path)
	}
	name := f.Filename
	if name == "" {
		name = filepath.Base(f.Path)
	}
	mt := f.MimeType
	if mt == "" {
		mt = mime.TypeByExtension(filepath.Ext(name))
	}
	ft := f.Type
	if ft == "" {
		ft = fileTypeOf(mt)
	}
	return h.files.add(userID, File{Path: f.Path, Filename: name, MimeType: mt, Type: ft, Size: info.Size()}), nil
}

// LookupFile returns the file of a unified file_ref that userID owns: one
// the host downloaded for the user (a message or a tool result) or one
// registered with [Host.RegisterFile]. References are kept in memory, at
// most Options.MaxFileRefs of them naming at most Options.MaxFileRefBytes,
// and do not survive a restart.
func (h *Host) LookupFile(userID, fileRef string) (File, bool) {
	return h.files.get(userID, fileRef)
}

// WithFileResolver resolves the unified file_refs of the call's
// upload-reference arguments before the host's own registry: fn returns the
// local file of a reference, or false to leave it to the registry. Use it
// when the platform keeps the conversation's files itself.
func WithFileResolver(fn func(fileRef string) (OutgoingFile, bool)) InvokeOption {
	return func(c *invokeConfig) { c.resolve = fn }
}
