package wechattest

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxObjects bounds the stored CDN objects and pending uploads.
const maxObjects = 10000

type pendingUpload struct {
	filekey  string
	key      []byte
	rawsize  int64
	md5      string
	filesize int64
}

type object struct {
	key []byte
	ct  []byte
}

func (s *Server) getUploadURL(w http.ResponseWriter, r *http.Request, a *account, body []byte) {
	var req struct {
		FileKey      string `json:"filekey"`
		MediaType    int    `json:"media_type"`
		ToUserID     string `json:"to_user_id"`
		RawSize      int64  `json:"rawsize"`
		RawFileMD5   string `json:"rawfilemd5"`
		FileSize     int64  `json:"filesize"`
		NoNeedThumb  bool   `json:"no_need_thumb"`
		AESKey       string `json:"aeskey"`
		ThumbRawSize *int64 `json:"thumb_rawsize"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		s.violate(w, r, "body: %v", err)
		return
	}
	key, kerr := hex.DecodeString(req.AESKey)
	fk, ferr := hex.DecodeString(req.FileKey)
	switch {
	case ferr != nil || len(fk) != 16:
		s.violate(w, r, "filekey %q is not the hex of 16 bytes", req.FileKey)
		return
	case kerr != nil || len(key) != 16:
		s.violate(w, r, "aeskey is not the hex of 16 bytes")
		return
	case req.MediaType < 1 || req.MediaType > 4:
		s.violate(w, r, "media_type %d", req.MediaType)
		return
	case req.ToUserID == "":
		s.violate(w, r, "to_user_id missing")
		return
	case req.FileSize != (req.RawSize/16+1)*16:
		s.violate(w, r, "filesize %d for rawsize %d, want %d", req.FileSize, req.RawSize, (req.RawSize/16+1)*16)
		return
	case len(req.RawFileMD5) != 32 || strings.ToLower(req.RawFileMD5) != req.RawFileMD5:
		s.violate(w, r, "rawfilemd5 is not lowercase hex MD5")
		return
	case !req.NoNeedThumb:
		s.violate(w, r, "no_need_thumb is not true")
		return
	}
	param := "up_" + randHex(16)
	s.mu.Lock()
	if len(s.uploads) >= maxObjects {
		clear(s.uploads)
	}
	s.uploads[param] = &pendingUpload{filekey: req.FileKey, key: key, rawsize: req.RawSize, md5: req.RawFileMD5, filesize: req.FileSize}
	s.mu.Unlock()
	writeJSON(w, map[string]any{"ret": 0, "errmsg": "", "upload_param": param, "thumb_upload_param": ""})
}

func (s *Server) cdnUpload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	up := s.uploads[q.Get("encrypted_query_param")]
	s.mu.Unlock()
	if up == nil || q.Get("filekey") != up.filekey {
		w.Header().Set("x-error-message", "unknown upload")
		http.Error(w, "unknown upload", http.StatusBadRequest)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/octet-stream" {
		s.violate(w, r, "Content-Type %q, want application/octet-stream", ct)
		return
	}
	ct, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil || int64(len(ct)) != up.filesize {
		s.violate(w, r, "ciphertext of %d bytes, want %d", len(ct), up.filesize)
		return
	}
	plain, err := Decrypt(up.key, ct)
	if err != nil {
		s.violate(w, r, "decrypt: %v", err)
		return
	}
	sum := md5.Sum(plain)
	if int64(len(plain)) != up.rawsize || hex.EncodeToString(sum[:]) != up.md5 {
		s.violate(w, r, "plaintext does not match rawsize/rawfilemd5")
		return
	}
	dl := s.store(up.key, ct)
	w.Header().Set("x-encrypted-param", dl)
	w.WriteHeader(http.StatusOK)
}

// store keeps a CDN object and returns its download parameter.
func (s *Server) store(key, ct []byte) string {
	dl := "dl_" + randHex(16)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.objects) >= maxObjects {
		clear(s.objects)
	}
	s.objects[dl] = &object{key: key, ct: ct}
	return dl
}

func (s *Server) cdnDownload(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		s.violate(w, r, "a CDN download carries no auth headers")
		return
	}
	s.mu.Lock()
	o := s.objects[r.URL.Query().Get("encrypted_query_param")]
	s.mu.Unlock()
	if o == nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(o.ct)))
	w.Write(o.ct)
}

// newKey returns a random AES-128 key.
func newKey() []byte {
	k := make([]byte, 16)
	_, _ = rand.Read(k)
	return k
}
