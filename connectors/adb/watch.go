package adb

import (
	"context"
	"time"

	"github.com/xconn/xconn/connector"
	adbc "github.com/xconn/xconn/connectors/adb/adbhost"
)

// watch keeps the Descriptors of serial's channels current: it reads the
// device list every PollInterval and sets each channel's device state, so
// a device that is unplugged, comes back or loses its authorisation is
// reflected (and pushed) within one interval, after DisconnectGrace for a
// device that merely went missing. It runs while a channel is bound to
// serial (the SDK starts and stops it).
func (c *Connector) watch(ctx context.Context, serial string, m *connector.Members[binding]) error {
	t := time.NewTicker(c.poll)
	defer t.Stop()
	var missingSince time.Time
	for {
		// What tool calls reported before this poll: a report made while
		// the poll runs is newer than what the poll sees, and wins.
		members := m.Channels()
		before := make([]uint64, len(members))
		for i, mb := range members {
			if d, err := c.clients.Get(mb.Channel); err == nil {
				before[i] = d.reports.Load()
			}
		}
		pctx, cancel := context.WithTimeout(ctx, c.cmdTimeout)
		dev, err := c.adb.Device(pctx, serial)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		st, reason := stateOf(dev, err, c.adb.Addr())
		if k, _ := adbc.KindOf(err); err != nil && k == adbc.KindNotFound && c.grace > 0 {
			if missingSince.IsZero() {
				missingSince = time.Now()
			}
			if time.Since(missingSince) < c.grace {
				st = "" // within the grace: leave the channels as they are
			}
		} else {
			missingSince = time.Time{}
		}
		if st != "" {
			for i, mb := range members {
				if d, err := c.clients.Get(mb.Channel); err == nil && d.reports.Load() != before[i] {
					continue // a tool call reported meanwhile; the next poll looks again
				}
				if err := mb.Channel.SetDeviceState(ctx, st, reason); err != nil && ctx.Err() == nil {
					c.log.Debug("adb: set device state", "channel", mb.Channel.ID(), "err", err.Error())
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
