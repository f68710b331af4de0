package openai

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
)

// maxSkillBytes bounds a Skill fetched by the agent itself.
const maxSkillBytes = 1 << 20

// skillFetchTimeout bounds that fetch.
const skillFetchTimeout = 10 * time.Second

// systemPrompt is the system message of a turn: the configured prompt,
// the channel the user writes from (its tools run on it; connector_message_send
// takes its connector_channel_id),
// then the connector's Skill.
func (a *Agent) systemPrompt(ctx context.Context, h Host, msg *host.UserMessage) string {
	cardID := msg.CardID
	prompt := a.opts.SystemPrompt
	if msg.ChannelID != "" {
		prompt += "\n\nThis conversation takes place on the channel with connector_channel_id " + msg.ChannelID +
			" of the connector " + cardID + "; its tools run on this channel by themselves."
	}
	var skill string
	if a.opts.Skill != nil {
		s, err := a.opts.Skill(ctx, cardID)
		if err != nil {
			a.log.Warn("openai agent: no Skill", "card_id", cardID, "err", err)
		}
		skill = s
	} else if h != nil {
		if c, ok := h.Connector(cardID); ok {
			if len(c.Skill) > 0 {
				skill = string(c.Skill)
			} else {
				skill = a.skills.get(ctx, c)
			}
		}
	}
	skill = strings.TrimSpace(skill)
	if skill == "" {
		return prompt
	}
	return prompt + "\n\n# Connector Skill\n\n" + skill
}

// skillCache fetches GET /skill.md for connectors the host holds no Skill
// of, once per admission (card id and its UpdatedAt), failures included.
// Bounded by the admitted connectors. Safe for concurrent use.
type skillCache struct {
	client *http.Client
	mu     sync.Mutex
	byCard map[string]cachedSkill
}

type cachedSkill struct {
	updated time.Time
	text    string
}

func newSkillCache(c *http.Client) *skillCache {
	return &skillCache{client: c, byCard: map[string]cachedSkill{}}
}

func (s *skillCache) get(ctx context.Context, c *host.Connector) string {
	s.mu.Lock()
	if e, ok := s.byCard[c.CardID]; ok && e.updated.Equal(c.UpdatedAt) {
		s.mu.Unlock()
		return e.text
	}
	s.mu.Unlock()
	text := s.fetch(ctx, c.BaseURL)
	s.mu.Lock()
	s.byCard[c.CardID] = cachedSkill{updated: c.UpdatedAt, text: text}
	s.mu.Unlock()
	return text
}

// fetch reads <base>/skill.md; "" on any failure.
func (s *skillCache) fetch(ctx context.Context, base string) string {
	u, err := url.Parse(strings.TrimRight(base, "/") + protocol.PathSkill)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, skillFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return ""
	}
	res, err := s.client.Do(req)
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxSkillBytes+1))
	if err != nil || len(b) > maxSkillBytes {
		return ""
	}
	return string(b)
}
