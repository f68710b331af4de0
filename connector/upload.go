package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/xconn/xconn/protocol"
)

// Upload is a tool argument declared as an upload reference (sections
// 8.19 and 10): a field of type Upload (or *Upload, optional) in a tool's
// input struct appears in the input_schema as
// {"type": "string", "format": "file_ref"} (see
// protocol.FormatUploadRef). xAgent shows the model a unified file_ref,
// uploads the file to this connector's /files/uploads for the channel and
// passes the returned reference. Before the handler runs, the SDK looks the
// reference up on the call's channel and hands the handler the opened
// file's metadata; read it with Open. An unknown, expired or foreign
// reference fails the call with invalid_arguments: the handler never sees
// bytes, base64 or a URL.
type Upload struct {
	*File
}

// JSONSchemaStringFormat declares Upload's schema: a string of format
// protocol.FormatUploadRef.
func (Upload) JSONSchemaStringFormat() string { return protocol.FormatUploadRef }

// UnmarshalJSON reads the reference (a JSON string).
func (u *Upload) UnmarshalJSON(b []byte) error {
	var ref string
	if err := json.Unmarshal(b, &ref); err != nil {
		return fmt.Errorf("upload reference: %w", err)
	}
	u.File = &File{Ref: ref}
	return nil
}

// MarshalJSON writes the reference.
func (u Upload) MarshalJSON() ([]byte, error) {
	if u.File == nil {
		return []byte(`""`), nil
	}
	return json.Marshal(u.Ref)
}

var uploadType = reflect.TypeFor[Upload]()

// uploadFields returns the index paths of the top-level Upload and
// *Upload fields of struct type t.
func uploadFields(t reflect.Type) [][]int {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out [][]int
	for _, f := range reflect.VisibleFields(t) {
		if f.IsExported() && (f.Type == uploadType || f.Type == reflect.PointerTo(uploadType)) {
			out = append(out, f.Index)
		}
	}
	return out
}

// resolveUploads replaces every upload reference of in (a pointer to the
// decoded input) with the channel's file of that reference.
func resolveUploads(ctx context.Context, ch *Channel, in any, fields [][]int) error {
	v := reflect.ValueOf(in).Elem()
	for _, idx := range fields {
		f := v.FieldByIndex(idx)
		var u *Upload
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				continue
			}
			u = f.Interface().(*Upload)
		} else {
			u = f.Addr().Interface().(*Upload)
		}
		if u.File == nil {
			continue
		}
		file, err := ch.OpenFile(ctx, u.Ref)
		if err != nil {
			return protocol.Errorf(protocol.CodeInvalidArguments, "upload reference %s is unknown, expired or not of this channel", u.Ref)
		}
		u.File = file
	}
	return nil
}
