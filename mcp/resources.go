package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource URIs: xconn://channels/{user_channel_id}/descriptor,
// xconn://channels/{user_channel_id}/history and xconn://files/{file_ref}.
const channelURIPrefix = "xconn://channels/"

func descriptorURI(ucID string) string { return channelURIPrefix + ucID + "/descriptor" }
func historyURI(ucID string) string    { return channelURIPrefix + ucID + "/history" }

// parseChannelURI returns the user channel and the kind ("descriptor",
// "history") of a channel resource URI.
func (s *Server) parseChannelURI(uri string) (ucID, kind string, ok bool) {
	rest, found := strings.CutPrefix(uri, channelURIPrefix)
	if !found {
		return "", "", false
	}
	ucID, kind, found = strings.Cut(rest, "/")
	if !found || ucID == "" || (kind != "descriptor" && kind != "history") {
		return "", "", false
	}
	return ucID, kind, true
}

// knownChannelURI reports whether uri names a resource of one of the
// user's channels (so that subscriptions stay bounded by the channels).
func (s *Server) knownChannelURI(ctx context.Context, uri string) bool {
	ucID, _, ok := s.parseChannelURI(uri)
	if !ok {
		return false
	}
	ucs, err := s.h.Channels(ctx, s.opts.UserID, "")
	if err != nil {
		return false
	}
	for _, uc := range ucs {
		if uc.ID == ucID {
			return true
		}
	}
	return false
}

func (s *Server) addResourceTemplates() {
	s.srv.AddResourceTemplate(&sdk.ResourceTemplate{Name: "channel-descriptor", Title: "Channel Descriptor",
		Description: "The Connection Descriptor of a channel: status, profiles, display-level account data, tool availability.",
		MIMEType:    "application/json", URITemplate: channelURIPrefix + "{user_channel_id}/descriptor"}, s.readChannel)
	s.srv.AddResourceTemplate(&sdk.ResourceTemplate{Name: "channel-history", Title: "Channel history",
		Description: "The recent messages of a channel seen by this server (bounded), oldest first. Subscribe to be told of new ones.",
		MIMEType:    "application/json", URITemplate: channelURIPrefix + "{user_channel_id}/history"}, s.readChannel)
	s.srv.AddResourceTemplate(&sdk.ResourceTemplate{Name: "file", Title: "Received file",
		Description: "A file a user sent or a tool returned, by its file_ref.",
		URITemplate: fileURIPrefix + "{file_ref}"}, s.readFile)
}

// syncResources lists each channel of the user as two resources.
func (s *Server) syncResources(ctx context.Context) {
	ucs, err := s.h.Channels(ctx, s.opts.UserID, "")
	if err != nil {
		s.log.Warn("mcp: list channels", "err", err)
		return
	}
	want := map[string]*sdk.Resource{}
	for _, uc := range ucs {
		ci := s.info(uc, nil)
		name := ci.CardID
		if ci.DisplayName != "" {
			name += " " + ci.DisplayName
		}
		want[descriptorURI(uc.ID)] = &sdk.Resource{URI: descriptorURI(uc.ID), Name: "descriptor " + uc.ChannelID,
			Title: name + " (Descriptor)", MIMEType: "application/json"}
		want[historyURI(uc.ID)] = &sdk.Resource{URI: historyURI(uc.ID), Name: "history " + uc.ChannelID,
			Title: name + " (recent messages)", MIMEType: "application/json"}
	}
	s.mu.Lock()
	var gone []string
	for uri := range s.res {
		if want[uri] == nil {
			gone = append(gone, uri)
			delete(s.res, uri)
		}
	}
	var add []*sdk.Resource
	for uri, r := range want {
		if !s.res[uri] {
			s.res[uri] = true
			add = append(add, r)
		}
	}
	s.mu.Unlock()
	if len(gone) > 0 {
		s.srv.RemoveResources(gone...)
	}
	for _, r := range add {
		s.srv.AddResource(r, s.readChannel)
	}
}

func (s *Server) readChannel(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	ucID, kind, ok := s.parseChannelURI(uri)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	ucs, err := s.h.Channels(ctx, s.opts.UserID, "")
	if err != nil {
		return nil, fmt.Errorf("list channels failed")
	}
	for _, uc := range ucs {
		if uc.ID != ucID {
			continue
		}
		var text []byte
		if kind == "descriptor" {
			text = uc.Descriptor
			if len(text) == 0 {
				text = []byte("null")
			}
		} else {
			text, _ = json.Marshal(struct {
				Channel  channelInfo `json:"channel"`
				Messages []Message   `json:"messages"`
			}{s.info(uc, s.in.unread(s.opts.UserID)), s.in.History(uc.ID)})
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(text)}}}, nil
	}
	return nil, sdk.ResourceNotFoundError(uri)
}

func (s *Server) readFile(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	ref, ok := strings.CutPrefix(uri, fileURIPrefix)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	f, ok := s.h.LookupFile(s.opts.UserID, ref)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if f.Size > s.opts.MaxFileBytes {
		return nil, fmt.Errorf("file %s is %d bytes: at most %d are served", ref, f.Size, s.opts.MaxFileBytes)
	}
	fh, err := os.Open(f.Path)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, s.opts.MaxFileBytes+1))
	if err != nil || int64(len(b)) > s.opts.MaxFileBytes {
		return nil, fmt.Errorf("file %s could not be read within %d bytes", ref, s.opts.MaxFileBytes)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: f.MimeType, Blob: b}}}, nil
}
