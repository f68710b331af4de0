package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// probeDefaultTimeout bounds one probe (a container HEALTHCHECK's own
// timeout is usually longer).
const probeDefaultTimeout = 5 * time.Second

func newProbeCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "probe [URL]",
		Short: "Ask a serve or host process whether it is ready (for container health checks)",
		Long: `Probe GETs URL, by default the /readyz of the --health address of a serve
or host process, and exits 0 when it answers 200, 1 when it answers
anything else or nothing (printing why: the reasons /readyz gives, such as
"standby: lease held by ...", or the connection error), and 2 on a usage
error. It is for container health checks in images without curl.

URL is http://HOST:PORT[/path]; without a path, or with no URL at all, it
probes /readyz; HOST:PORT alone is taken as http://HOST:PORT. With no URL,
the address comes from XCONN_HEALTH (as "serve" and "host" read it), an
empty host meaning this machine.`,
		Example: `  xconn probe                                  # XCONN_HEALTH=:8081 → http://127.0.0.1:8081/readyz
  xconn probe http://127.0.0.1:8081/livez
  HEALTHCHECK CMD ["/xconn", "probe"]`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw := os.Getenv("XCONN_HEALTH")
			if len(args) == 1 {
				raw = args[0]
			}
			u, err := probeURL(raw)
			if err != nil {
				return usageError(err)
			}
			if timeout <= 0 {
				return usageError(errors.New("--timeout must be positive"))
			}
			ready, why, err := probe(cmd.Context(), u, timeout)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("probe %s: %w", u, err)}
			}
			if !ready {
				return &exitError{code: 1, err: fmt.Errorf("not ready: %s", why)}
			}
			fmt.Fprintln(cmd.OutOrStdout(), why)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", probeDefaultTimeout, "give up after this long")
	return cmd
}

// probeURL turns the argument of probe (or XCONN_HEALTH) into the URL to
// GET: http(s) only, /readyz when it has no path, an empty or unspecified
// host meaning the loopback address.
func probeURL(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("no URL: give one, or set XCONN_HEALTH to the --health address")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("URL %q: want http:// or https://", raw)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" && host == "" {
		return "", fmt.Errorf("URL %q: no host or port", raw)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		u.Host = net.JoinHostPort(host, port)
		if port == "" {
			u.Host = host
		}
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/readyz"
	}
	return u.String(), nil
}

// probe GETs u within timeout: ready when it answers 200, with why the
// first line of the body (the reasons of a /readyz), or the status.
func probe(ctx context.Context, u string, timeout time.Duration) (ready bool, why string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, "", err
	}
	req.Header.Set("Accept", "text/plain")
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is said once, by the caller
		}
		return false, "", err
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(io.LimitReader(resp.Body, 4<<10)).ReadString('\n')
	line = strings.Join(strings.Fields(line), " ")
	if line == "" {
		line = resp.Status
	}
	return resp.StatusCode == http.StatusOK, line, nil
}
