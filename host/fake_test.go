package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/internal/wsconn"
	"github.com/xconn/xconn/protocol"
)

// fakeConnector is a small handwritten Connector Server for the host's
// tests: real HTTP and WebSocket on loopback, scripted behaviour.
type fakeConnector struct {
	t      testing.TB
	srv    *httptest.Server
	prefix string
	apiKey string

	mu           sync.Mutex
	card         *protocol.Card
	skill        []byte // nil: 404
	skillStatus  int
	cardStatus   int
	healthStatus int
	healthCardID string  // overrides the health connector_card_id
	healthVer    string  // overrides connector_card_version
	healthBody   *string // overrides the whole health body (200)
	connectorID  string
	nextID       int
	channels     map[string]*fakeChannel
	conns        []*wsconn.Conn
	runs         sync.WaitGroup
	received     []*protocol.Envelope
	qrPolls      map[string]int    // auth session -> polls so far
	seenFinals   map[string]string // message_id -> text (connector inbox)
	rejectFinals int               // reject the next N finals retryable
	noAckFinals  int               // swallow the next N finals (no ack)
	uploads      map[string][]byte
	downloads    map[string][]byte
	ackCh        chan protocol.ChatAckPayload
	finalCh      chan protocol.ChatMessagePayload
	refuseWS     bool
	qrHold       bool // QR sessions stay pending
	// qrStartPush pushes the channel's (not yet signed-in) Descriptor
	// right after the QR auth.start ack, as the SDK pushes
	// "authenticating".
	qrStartPush  bool
	msgAfterAuth bool // send a chat.message right after an authenticated auth ack
	holdSlow     bool // keep _slow calls unanswered in held (the test answers them)
	held         []*protocol.Envelope
}

type fakeChannel struct {
	id            string
	connectorID   string
	authenticated bool
	conn          *wsconn.Conn
}

func fakeCard(t testing.TB, cardID string, mode string) *protocol.Card {
	schema := func(props string) json.RawMessage {
		s, err := protocol.WithConnectorChannelIDInputSchema(json.RawMessage(`{"type":"object","properties":{` + props + `}}`))
		if err != nil {
			t.Fatalf("tool schema: %v", err)
		}
		return s
	}
	provider := strings.ReplaceAll(cardID, ".", "_")
	skillName := protocol.PrimarySkillName(cardID)
	c := &protocol.Card{
		Schema: protocol.CardSchema, ProtocolVersion: "3.0",
		Build:           protocol.Build{Version: "0.0.1", GitTag: "v0.0.1", GitRev: "abc1234", BuildTime: "2612021200"},
		ConnectorCardID: cardID,
		Connector:       protocol.CardInfo{Name: "Fake " + cardID, Version: "1.0.0"},
		Supports: protocol.Supports{UserChannelMode: mode, TargetTypes: []protocol.TargetType{protocol.TargetIM},
			Targets:  []protocol.Target{{TargetType: protocol.TargetIM, Provider: provider, Label: "Fake"}},
			Profiles: []protocol.Profile{protocol.ProfileIMv2}},
		Tools: []protocol.Tool{
			{ToolID: provider + "_send", Profile: protocol.ProfileIMv2, Title: "Send", Description: "Send text.",
				RelatedSkillIDs: []string{skillName}, InputSchema: schema(`"text":{"type":"string"}`)},
			{ToolID: provider + "_slow", Profile: protocol.ProfileIMv2, Title: "Slow", Description: "Reports progress.",
				InputSchema: schema(``)},
			{ToolID: provider + ".dotted", Profile: protocol.ProfileIMv2, Title: "Dotted", Description: "A tool id with a period.",
				InputSchema: schema(``)},
			{ToolID: provider + "_off", Profile: protocol.ProfileIMv2, Title: "Off", Description: "Never available.",
				InputSchema: schema(``)},
		},
		AuthFlows: []protocol.AuthFlow{
			{ID: "room", TargetType: protocol.TargetIM, Type: protocol.AuthFlowForm, Title: "Room",
				Fields: []protocol.AuthField{{Name: "room", Label: "Room", InputType: protocol.InputText, Required: true},
					{Name: "access_code", Label: "Code", InputType: protocol.InputPassword, Secret: true}}},
			{ID: "qr", TargetType: protocol.TargetIM, Type: protocol.AuthFlowQRLogin, Title: "QR"},
		},
		Security: &protocol.Security{TrustLevel: protocol.TrustLocal, APIKeyRequired: true},
	}
	if vs := protocol.ValidateCard(c); len(vs) > 0 {
		t.Fatalf("fake card invalid: %v", vs)
	}
	return c
}

func newFakeConnector(t testing.TB, cardID, prefix string) *fakeConnector {
	f := &fakeConnector{t: t, prefix: prefix, apiKey: "fake-api-key-123456",
		card: fakeCard(t, cardID, protocol.UserChannelMultiple), connectorID: "conn_1", nextID: 1,
		channels: map[string]*fakeChannel{}, qrPolls: map[string]int{}, seenFinals: map[string]string{},
		uploads: map[string][]byte{}, downloads: map[string][]byte{},
		ackCh: make(chan protocol.ChatAckPayload, 64), finalCh: make(chan protocol.ChatMessagePayload, 64)}
	f.skill = []byte("---\nname: " + protocol.PrimarySkillName(cardID) + "\ndescription: test\n---\n# Skill\n")
	f.srv = httptest.NewServer(http.StripPrefix(prefix, http.HandlerFunc(f.serveHTTP)))
	t.Cleanup(f.close)
	return f
}

func (f *fakeConnector) baseURL() string { return f.srv.URL + f.prefix }

func (f *fakeConnector) close() {
	f.dropAll()
	f.srv.Close()
	f.runs.Wait()
}

// dropAll closes every data-plane socket (a connector restart).
func (f *fakeConnector) dropAll() {
	f.mu.Lock()
	conns := f.conns
	f.conns = nil
	f.mu.Unlock()
	for _, c := range conns {
		_ = c.Close(websocket.StatusGoingAway, "restart")
	}
}

// forget simulates a connector that lost its state: a new connector_id and
// no channels.
func (f *fakeConnector) forget() {
	f.mu.Lock()
	f.connectorID = fmt.Sprintf("conn_%d", f.nextID+100)
	f.nextID += 100
	f.channels = map[string]*fakeChannel{}
	f.mu.Unlock()
	f.dropAll()
}

func (f *fakeConnector) set(fn func(f *fakeConnector)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeConnector) serveHTTP(w http.ResponseWriter, r *http.Request) {
	authOK := r.Header.Get("Authorization") == "Bearer "+f.apiKey
	f.mu.Lock()
	card := f.card
	f.mu.Unlock()
	switch {
	case r.URL.Path == protocol.PathCard:
		f.mu.Lock()
		st := f.cardStatus
		f.mu.Unlock()
		if st != 0 {
			w.WriteHeader(st)
			return
		}
		_ = json.NewEncoder(w).Encode(card)
	case r.URL.Path == protocol.PathSkill:
		f.mu.Lock()
		skill, st := f.skill, f.skillStatus
		f.mu.Unlock()
		switch {
		case st != 0:
			w.WriteHeader(st)
		case skill == nil:
			w.WriteHeader(http.StatusNotFound)
		default:
			_, _ = w.Write(skill)
		}
	case r.URL.Path == protocol.PathHealth:
		if !authOK {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		f.mu.Lock()
		st, id, ver, body := f.healthStatus, f.healthCardID, f.healthVer, f.healthBody
		f.mu.Unlock()
		if st != 0 {
			w.WriteHeader(st)
			return
		}
		if body != nil {
			_, _ = io.WriteString(w, *body)
			return
		}
		if id == "" {
			id = card.ConnectorCardID
		}
		if ver == "" {
			ver = card.Connector.Version
		}
		b := card.Build
		_ = json.NewEncoder(w).Encode(protocol.HealthResponse{Status: "ok", ConnectorCardID: id,
			ConnectorCardVersion: ver, ProtocolVersion: card.ProtocolVersion, Build: &b})
	case r.URL.Path == protocol.PathWS:
		f.mu.Lock()
		refuse := f.refuseWS
		f.mu.Unlock()
		if !authOK || refuse {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		c, err := wsconn.Accept(w, r, wsconn.Options{})
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.runs.Add(1)
		f.mu.Unlock()
		go func() {
			defer f.runs.Done()
			_ = c.Run(context.Background(), func(env *protocol.Envelope, _ []byte, err error) {
				if err == nil {
					f.handle(c, env)
				}
			})
		}()
	case r.URL.Path == protocol.PathFileUploads && r.Method == http.MethodPost:
		if !authOK {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		file, hdr, err := r.FormFile("file")
		if err != nil {
			http.Error(w, "no file", http.StatusBadRequest)
			return
		}
		data, _ := io.ReadAll(file)
		f.mu.Lock()
		f.nextID++
		ref := fmt.Sprintf("up_%d", f.nextID)
		f.uploads[ref] = data
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(protocol.UploadResponse{FileRef: ref, FileType: protocol.FileFile,
			Filename: hdr.Filename, ByteSize: int64(len(data)), ExpiresAt: time.Now().Add(time.Hour).UnixMilli()})
	case strings.HasPrefix(r.URL.Path, protocol.PathFileRefsPrefix):
		ref := strings.TrimPrefix(r.URL.Path, protocol.PathFileRefsPrefix)
		f.mu.Lock()
		data, ok := f.downloads[ref]
		f.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(data)
	case r.URL.Path == "/redirect":
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func (f *fakeConnector) descriptor(ch *fakeChannel) *protocol.Descriptor {
	status := protocol.StatusCreated
	if ch.authenticated {
		status = protocol.StatusConnected
	}
	provider := f.card.Supports.Targets[0].Provider
	d := &protocol.Descriptor{Schema: protocol.DescriptorSchema,
		Connection: protocol.Connection{ConnectorCardID: f.card.ConnectorCardID, ConnectorID: ch.connectorID,
			ConnectorChannelID: ch.id, TargetType: protocol.TargetIM, Profiles: append([]protocol.Profile(nil), f.card.Supports.Profiles...), Status: status},
		Target: protocol.DescriptorTarget{Provider: provider, Label: "Fake", DisplayName: "Fake room"}}
	for _, tl := range f.card.Tools {
		st := protocol.ToolUnavailable
		if ch.authenticated && !strings.HasSuffix(tl.ToolID, "_off") {
			st = protocol.ToolAvailable
		}
		d.Tools = append(d.Tools, protocol.ToolState{ToolID: tl.ToolID, Status: st})
	}
	return d
}

func (f *fakeConnector) reply(c *wsconn.Conn, req *protocol.Envelope, typ string, payload any, perr *protocol.Error) {
	env := req.Reply(typ)
	env.PacketID, env.Time = fmt.Sprintf("fpkt_%d", time.Now().UnixNano()), time.Now().UnixMilli()
	if payload != nil {
		if err := env.SetPayload(payload); err != nil {
			f.t.Errorf("fake: encode %s: %v", typ, err)
		}
	}
	if perr != nil {
		env.Error = perr.Wire()
	}
	_ = c.Send(context.Background(), env)
}

// handle runs on the fake's reader goroutine; it only does quick work.
func (f *fakeConnector) handle(c *wsconn.Conn, env *protocol.Envelope) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.received = append(f.received, env)
	spec, _ := protocol.LookupPacket(env.Type)
	ch := f.channels[env.ConnectorChannelID]
	if spec.UserLevel && env.Type != protocol.TypeChannelOpen && env.Type != protocol.TypeChatMessageAck && (ch == nil || ch.conn != c) {
		if env.Type == protocol.TypeChatMessage {
			return
		}
		f.reply(c, env, protocol.TypeError, nil, protocol.Errorf(protocol.CodeChannelNotOpen, "channel not open"))
		return
	}
	switch env.Type {
	case protocol.TypeHello:
		var p protocol.HelloPayload
		_ = env.DecodePayload(&p)
		f.reply(c, env, protocol.TypeHelloAck, protocol.HelloAckPayload{ConnectorCardID: f.card.ConnectorCardID,
			ConnectorID: f.connectorID, ProtocolVersion: "3.0"}, nil)
	case protocol.TypeChannelOpen:
		ch := f.channels[env.ConnectorChannelID]
		if ch == nil {
			f.nextID++
			ch = &fakeChannel{id: fmt.Sprintf("cch_%d", f.nextID), connectorID: f.connectorID}
			f.channels[ch.id] = ch
		}
		ch.conn = c
		env.ConnectorChannelID = ch.id
		f.reply(c, env, protocol.TypeChannelOpenAck, protocol.ChannelOpenAckPayload{ConnectorChannelID: ch.id, ConnectionDescriptor: f.descriptor(ch)}, nil)
	case protocol.TypeChannelClose:
		ch.conn = nil
		f.reply(c, env, protocol.TypeChannelCloseAck, protocol.StatusPayload{Status: "ok"}, nil)
	case protocol.TypeAuthStart:
		var p protocol.AuthStartPayload
		_ = env.DecodePayload(&p)
		switch p.FlowID {
		case "room":
			if p.Input["room"] == "" {
				f.reply(c, env, protocol.TypeAuthStartAck, protocol.AuthStatePayload{ConnectorChannelID: ch.id, FlowID: p.FlowID, Status: protocol.AuthFailed, Message: "room required"}, nil)
				return
			}
			ch.authenticated = true
			f.reply(c, env, protocol.TypeAuthStartAck, protocol.AuthStatePayload{ConnectorChannelID: ch.id, FlowID: p.FlowID,
				AuthSessionID: "auth_" + ch.id, Status: protocol.AuthAuthenticated, ConnectionDescriptor: f.descriptor(ch)}, nil)
			if f.msgAfterAuth {
				f.sendChatLocked(c, ch.id, protocol.ChatMessagePayload{MessageID: "first-" + ch.id, Text: "hello right away"})
			}
		case "qr":
			f.qrPolls["qr_"+ch.id] = 0
			f.reply(c, env, protocol.TypeAuthStartAck, protocol.AuthStatePayload{ConnectorChannelID: ch.id, FlowID: p.FlowID,
				AuthSessionID: "qr_" + ch.id, Status: protocol.AuthPending, QRCodeText: "https://fake/qr/" + ch.id,
				PollIntervalMillis: 10, ExpiresAt: time.Now().Add(time.Minute).UnixMilli()}, nil)
			if f.qrStartPush {
				push := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: fmt.Sprintf("dp_%d", time.Now().UnixNano()),
					ConnectorChannelID: ch.id, Type: protocol.TypeDescriptorPush, Time: time.Now().UnixMilli()}
				if err := push.SetPayload(protocol.DescriptorPayload{ConnectionDescriptor: f.descriptor(ch)}); err == nil {
					_ = c.Send(context.Background(), push)
				}
			}
		default:
			f.reply(c, env, protocol.TypeAuthStartAck, nil, protocol.Errorf(protocol.CodeAuthFlowNotFound, "no flow"))
		}
	case protocol.TypeAuthStatus:
		var p protocol.AuthStatusPayload
		_ = env.DecodePayload(&p)
		n, ok := f.qrPolls[p.AuthSessionID]
		if !ok {
			f.reply(c, env, protocol.TypeAuthStatusAck, nil, protocol.Errorf(protocol.CodeAuthSessionNotFound, "unknown session"))
			return
		}
		n++
		f.qrPolls[p.AuthSessionID] = n
		st := protocol.AuthStatePayload{ConnectorChannelID: ch.id, FlowID: "qr", AuthSessionID: p.AuthSessionID, PollIntervalMillis: 10}
		switch {
		case f.qrHold || n < 2:
			st.Status = protocol.AuthPending
		case n < 3:
			st.Status = protocol.AuthScanned
		default:
			ch.authenticated = true
			st.Status = protocol.AuthAuthenticated
			st.ConnectionDescriptor = f.descriptor(ch)
		}
		f.reply(c, env, protocol.TypeAuthStatusAck, st, nil)
	case protocol.TypeAuthCancel:
		var p protocol.AuthCancelPayload
		_ = env.DecodePayload(&p)
		delete(f.qrPolls, p.AuthSessionID)
		f.reply(c, env, protocol.TypeAuthCancelAck, protocol.AuthCancelAckPayload{ConnectorChannelID: ch.id, AuthSessionID: p.AuthSessionID, Status: protocol.CancelCanceled}, nil)
	case protocol.TypeAuthLogout:
		ch.authenticated = false
		f.reply(c, env, protocol.TypeAuthLogoutAck, protocol.AuthLogoutAckPayload{Status: "ok", ConnectionDescriptor: f.descriptor(ch)}, nil)
	case protocol.TypeDescriptorGet:
		f.reply(c, env, protocol.TypeDescriptorGetAck, protocol.DescriptorPayload{ConnectionDescriptor: f.descriptor(ch)}, nil)
	case protocol.TypeToolInvoke:
		var p protocol.ToolInvokePayload
		_ = env.DecodePayload(&p)
		if strings.HasSuffix(p.ToolID, "_slow") && f.holdSlow {
			f.held = append(f.held, env)
			return
		}
		if strings.HasSuffix(p.ToolID, "_slow") {
			prog := 0.5
			pe := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "fprog", RequestID: env.RequestID,
				ConnectorChannelID: ch.id, Type: protocol.TypeToolProgressPush}
			_ = pe.SetPayload(protocol.ToolProgressPayload{ToolID: p.ToolID, Status: "running", Progress: &prog})
			_ = c.Send(context.Background(), pe)
		}
		if strings.HasSuffix(p.ToolID, "_off") {
			f.reply(c, env, protocol.TypeToolInvokeAck, nil, protocol.Errorf(protocol.CodeConnectorChannelUnavailable, "tool unavailable"))
			return
		}
		res, _ := json.Marshal(map[string]any{"routed_to": env.ConnectorChannelID, "arguments": p.Arguments, "tool_call_id": p.Context.ToolCallID})
		f.reply(c, env, protocol.TypeToolInvokeAck, protocol.ToolInvokeAckPayload{ToolID: p.ToolID, Result: res}, nil)
	case protocol.TypeChatMessage: // an assistant final
		var p protocol.ChatMessagePayload
		_ = env.DecodePayload(&p)
		if f.noAckFinals > 0 {
			f.noAckFinals--
			return
		}
		ack := protocol.ChatAckPayload{MessageID: p.MessageID, Status: protocol.AckAccepted}
		switch {
		case f.rejectFinals > 0:
			f.rejectFinals--
			ack = protocol.ChatAckPayload{MessageID: p.MessageID, Status: protocol.AckRejected, Code: "target_delivery_failed", Retryable: ptr(true)}
		case f.seenFinals[p.MessageID] != "":
			ack.Status = protocol.AckDuplicate
		default:
			f.seenFinals[p.MessageID] = p.Text
			select {
			case f.finalCh <- p:
			default:
			}
		}
		e := env.Reply(protocol.TypeChatMessageAck)
		e.RequestID = ""
		e.PacketID, e.Time = fmt.Sprintf("fack_%d", time.Now().UnixNano()), time.Now().UnixMilli()
		_ = e.SetPayload(ack)
		_ = c.Send(context.Background(), e)
	case protocol.TypeChatMessageAck:
		var p protocol.ChatAckPayload
		_ = env.DecodePayload(&p)
		select {
		case f.ackCh <- p:
		default:
		}
	case protocol.TypePing:
		f.reply(c, env, protocol.TypePong, protocol.EmptyPayload{}, nil)
	}
}

// publish sends an inbound chat.message on a channel and returns its packet id.
func (f *fakeConnector) publish(channelID string, p protocol.ChatMessagePayload) string {
	f.t.Helper()
	f.mu.Lock()
	var conn *wsconn.Conn
	if ch := f.channels[channelID]; ch != nil {
		conn = ch.conn
	}
	f.mu.Unlock()
	if conn == nil {
		f.t.Fatalf("fake: channel %s not open", channelID)
	}
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: fmt.Sprintf("fin_%d", time.Now().UnixNano()),
		ConnectorChannelID: channelID, Type: protocol.TypeChatMessage, Time: time.Now().UnixMilli()}
	if err := env.SetPayload(p); err != nil {
		f.t.Fatal(err)
	}
	if err := conn.Send(context.Background(), env); err != nil {
		f.t.Fatalf("fake: publish: %v", err)
	}
	return env.PacketID
}

// sendChatLocked sends an inbound chat.message on c; f.mu is held.
func (f *fakeConnector) sendChatLocked(c *wsconn.Conn, channelID string, p protocol.ChatMessagePayload) {
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: fmt.Sprintf("fin_%d", time.Now().UnixNano()),
		ConnectorChannelID: channelID, Type: protocol.TypeChatMessage, Time: time.Now().UnixMilli()}
	if err := env.SetPayload(p); err != nil {
		f.t.Errorf("fake: %v", err)
		return
	}
	_ = c.Send(context.Background(), env)
}

// sendRaw sends an arbitrary packet on the socket of a channel.
func (f *fakeConnector) sendOn(channelID string, env *protocol.Envelope) {
	f.t.Helper()
	f.mu.Lock()
	var conn *wsconn.Conn
	if ch := f.channels[channelID]; ch != nil {
		conn = ch.conn
	}
	f.mu.Unlock()
	if conn == nil {
		f.t.Fatalf("fake: channel %s not open", channelID)
	}
	if err := conn.Send(context.Background(), env); err != nil {
		f.t.Fatalf("fake: send: %v", err)
	}
}

// count returns how many packets of type typ the fake received.
func (f *fakeConnector) count(typ string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, e := range f.received {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func (f *fakeConnector) packets(typ string) []*protocol.Envelope {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*protocol.Envelope
	for _, e := range f.received {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}
