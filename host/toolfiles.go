package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/xconn/xconn/protocol"
)

// FileRefDescription is what the model reads about an argument that takes a
// unified file_ref (a tool argument the Card declares as an upload
// reference; see protocol.UploadRefArguments for the spellings read).
const FileRefDescription = "file_ref of a file of this conversation (one the user sent or a tool returned), passed unchanged; the host hands the file to the tool."

// toolProjection is a tool's input_schema as the model sees it.
type toolProjection struct {
	params   json.RawMessage
	fileArgs []string // sorted
}

// projectTool projects a Card tool's input_schema: every top-level property
// declared as an upload reference becomes a string that takes a unified
// file_ref, described as such (its format and any constraint on the
// connector's reference are dropped, its title and description kept after
// FileRefDescription). Other schemas are returned unchanged.
func projectTool(t *protocol.Tool) toolProjection {
	names := protocol.UploadRefArguments(t.InputSchema)
	if len(names) == 0 {
		return toolProjection{params: t.InputSchema}
	}
	slices.Sort(names)
	var schema map[string]any
	dec := json.NewDecoder(bytes.NewReader(t.InputSchema))
	dec.UseNumber()
	if dec.Decode(&schema) != nil {
		return toolProjection{params: t.InputSchema}
	}
	props, _ := schema["properties"].(map[string]any)
	for _, name := range names {
		old, _ := props[name].(map[string]any)
		desc := FileRefDescription
		if d, ok := old["description"].(string); ok && d != "" {
			desc += " " + d
		}
		p := map[string]any{"type": "string", "description": desc}
		if title, ok := old["title"].(string); ok {
			p["title"] = title
		}
		props[name] = p
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return toolProjection{params: t.InputSchema}
	}
	return toolProjection{params: b, fileArgs: names}
}

// projection returns the projection of a tool of the runtime's Card,
// computed once per Card (a tool of a Card replaced since is projected
// again, not cached).
func (rt *runtime) projection(t *protocol.Tool) toolProjection {
	rt.mu.Lock()
	if p, ok := rt.projs[t.ToolID]; ok {
		rt.mu.Unlock()
		return p
	}
	rt.mu.Unlock()
	p := projectTool(t) // outside the lock: it decodes the schema
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if ct, ok := rt.card.Tool(t.ToolID); ok && ct == t {
		if rt.projs == nil {
			rt.projs = map[string]toolProjection{}
		}
		rt.projs[t.ToolID] = p
	}
	return p
}

// uploadArgs replaces the unified file_refs in the upload-reference
// arguments of args by the connector's references: each file is opened and
// uploaded with POST /files/uploads for channelID. The other arguments are
// kept as they are. A reference that is not a file of the user fails the
// call with invalid_arguments.
func (h *Host) uploadArgs(ctx context.Context, rt *runtime, channelID, userID string, args json.RawMessage, names []string, cfg *invokeConfig) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if len(args) == 0 || json.Unmarshal(args, &obj) != nil {
		return args, nil // not an object: the connector's validation answers
	}
	changed := false
	for _, name := range names {
		raw, ok := obj[name]
		if !ok || string(raw) == "null" {
			continue
		}
		var ref string
		if json.Unmarshal(raw, &ref) != nil {
			return nil, protocol.Errorf(protocol.CodeInvalidArguments, "argument %q must be a file_ref string", name)
		}
		f, ok := h.resolveFileRef(userID, ref, cfg)
		if !ok {
			return nil, protocol.Errorf(protocol.CodeInvalidArguments, "argument %q: %q is not a file_ref of a file of this conversation (or it expired)", name, ref)
		}
		if _, err := os.Stat(f.Path); err != nil {
			return nil, protocol.Errorf(protocol.CodeInvalidArguments, "argument %q: the file of %q is no longer available", name, ref)
		}
		cf, err := h.upload(ctx, rt, channelID, f)
		if err != nil {
			return nil, &protocol.Error{Code: CodeFileUploadFailed, Message: fmt.Sprintf("argument %q: %v", name, err), Retryable: true}
		}
		obj[name] = json.RawMessage(strconv.Quote(cf.FileRef))
		changed = true
	}
	if !changed {
		return args, nil
	}
	return json.Marshal(obj)
}

func (h *Host) resolveFileRef(userID, ref string, cfg *invokeConfig) (OutgoingFile, bool) {
	if cfg.resolve != nil {
		if f, ok := cfg.resolve(ref); ok {
			return f, true
		}
	}
	f, ok := h.files.get(userID, ref)
	if !ok {
		return OutgoingFile{}, false
	}
	return OutgoingFile{Path: f.Path, Filename: f.Filename, MimeType: f.MimeType, Type: f.Type}, true
}

// maxResultDepth bounds the nesting of a tool result searched for files.
const maxResultDepth = 16

// resultFiles downloads the files of a tool result (section 8.19, Device
// Profile section 6): every JSON object, at any depth up to
// maxResultDepth, with string members file_ref and download_url is a file
// item shaped like a chat.message file (type, filename, mime_type and
// byte_size optional). At most MaxFilesPerMessage are downloaded, each
// bounded by MaxFileBytes and by the download origins, into
// FilesDir/<user channel>, and registered for userID. It returns the files,
// the errors of those that failed, and the result as the model may see it:
// in each file item the connector's file_ref and download_url are replaced
// by the host's unified file_ref ("file_ref"), or by "error" for a file that
// failed. A result without file items is returned unchanged.
func (h *Host) resultFiles(ctx context.Context, rt *runtime, ucID, userID string, out json.RawMessage) ([]File, []error, json.RawMessage) {
	if !bytes.Contains(out, []byte(`"download_url"`)) {
		return nil, nil, out
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return nil, nil, out
	}
	var items []map[string]any
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > maxResultDepth {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			_, ref := v["file_ref"].(string)
			_, u := v["download_url"].(string)
			if ref && u {
				items = append(items, v)
				return
			}
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys) // a stable order of the files
			for _, k := range keys {
				walk(v[k], depth+1)
			}
		case []any:
			for _, c := range v {
				walk(c, depth+1)
			}
		}
	}
	walk(v, 0)
	if len(items) == 0 {
		return nil, nil, out
	}
	base, _, _ := rt.view()
	dir := filepath.Join(h.filesDir, safeName(ucID))
	dirErr := os.MkdirAll(dir, 0o700)
	h.pruneFiles()
	var files []File
	var errs []error
	for i, it := range items {
		cf := chatFileOf(it)
		var (
			f   File
			err error
		)
		switch {
		case dirErr != nil:
			err = &protocol.Error{Code: CodeFileDownloadFailed, Message: "cannot create the files directory", Retryable: true}
		case i >= h.opts.MaxFilesPerMessage:
			err = protocol.Errorf(protocol.CodeInvalidPacket, "more than %d files in the result", h.opts.MaxFilesPerMessage)
		default:
			f, err = h.downloadOne(ctx, base, dir, cf)
		}
		delete(it, "download_url")
		if err != nil {
			err = fmt.Errorf("result file %d (%s): %w", i, cf.Filename, err)
			errs = append(errs, err)
			delete(it, "file_ref")
			msg := string(CodeFileDownloadFailed)
			if pe := protocol.AsError(err); pe != nil {
				msg = pe.Error()
			}
			it["error"] = msg
			continue
		}
		f = h.files.add(userID, f)
		files = append(files, f)
		it["file_ref"] = f.Ref
		it["byte_size"] = f.Size
		if f.Filename != "" {
			it["filename"] = f.Filename
		}
		if f.MimeType != "" {
			it["mime_type"] = f.MimeType
		}
		it["type"] = f.Type
	}
	model, err := json.Marshal(v)
	if err != nil {
		model = out
	}
	return files, errs, model
}

// chatFileOf reads a file item of a tool result.
func chatFileOf(m map[string]any) protocol.ChatFile {
	str := func(k string) string { s, _ := m[k].(string); return s }
	cf := protocol.ChatFile{FileRef: str("file_ref"), DownloadURL: str("download_url"), Filename: str("filename"),
		MimeType: str("mime_type"), Type: protocol.FileType(str("type"))}
	if n, ok := m["byte_size"].(json.Number); ok {
		cf.ByteSize, _ = n.Int64()
	}
	return cf
}
