package adb

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Inputs of the tools. None takes a serial or any other device fact: the
// channel's binding names the device (Device Profile v1 §3).
type (
	// NoInput is the input of the observation tools.
	NoInput struct{}
	// TapInput is android_tap's input.
	TapInput struct {
		X int `json:"x" desc:"Horizontal pixel, 0 at the left edge, less than the screen width android_device_status reports."`
		Y int `json:"y" desc:"Vertical pixel, 0 at the top edge, less than the screen height."`
	}
	// SwipeInput is android_swipe's input.
	SwipeInput struct {
		X1         int  `json:"x1" desc:"Start, horizontal pixel."`
		Y1         int  `json:"y1" desc:"Start, vertical pixel."`
		X2         int  `json:"x2" desc:"End, horizontal pixel."`
		Y2         int  `json:"y2" desc:"End, vertical pixel."`
		DurationMS *int `json:"duration_ms,omitempty" desc:"Duration in milliseconds, 50 to 5000 (default 300); longer is slower, as a scroll rather than a fling."`
	}
	// TextInput is android_text_input's input.
	TextInput struct {
		Text string `json:"text" desc:"Printable ASCII text (1 to 500 characters) typed into the focused field; tap the field first."`
	}
	// KeyInput is android_key's input.
	KeyInput struct {
		Key string `json:"key" enum:"back,home,recents,power,volume_up,volume_down,enter" desc:"The key to press."`
	}
	// AppLaunchInput is android_app_launch's input.
	AppLaunchInput struct {
		Package string `json:"package" desc:"Installed application package, such as com.android.settings."`
	}
)

// Results of the tools.
type (
	// Status is android_device_status's result.
	Status struct {
		Model              string `json:"model"`
		Manufacturer       string `json:"manufacturer,omitempty"`
		AndroidVersion     string `json:"android_version"`
		SDKLevel           int    `json:"sdk_level,omitempty"`
		BatteryLevel       int    `json:"battery_level"` // percent; -1 unknown
		Charging           bool   `json:"charging"`
		ScreenOn           bool   `json:"screen_on"`
		ScreenWidth        int    `json:"screen_width"`
		ScreenHeight       int    `json:"screen_height"`
		ForegroundApp      string `json:"foreground_app,omitempty"`
		ForegroundActivity string `json:"foreground_activity,omitempty"`
	}
	// Screenshot is android_screenshot's result: the PNG is a transfer
	// plane file, never inline.
	Screenshot struct {
		File   protocol.ChatFile `json:"file"`
		Width  int               `json:"width"`
		Height int               `json:"height"`
	}
	// Done is the result of a control tool.
	Done struct {
		OK     bool   `json:"ok"`
		Action string `json:"action"`
		Detail string `json:"detail,omitempty"`
	}
)

// keyCodes is android_key's enumerated set.
var keyCodes = map[string]string{
	"back":        "KEYCODE_BACK",
	"home":        "KEYCODE_HOME",
	"recents":     "KEYCODE_APP_SWITCH",
	"power":       "KEYCODE_POWER",
	"volume_up":   "KEYCODE_VOLUME_UP",
	"volume_down": "KEYCODE_VOLUME_DOWN",
	"enter":       "KEYCODE_ENTER",
}

// packagePattern is a Java package name as Android accepts it.
var packagePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$`)

func (c *Connector) registerTools() []error {
	observe := func(title, desc string) connector.ToolOptions {
		return connector.ToolOptions{Title: title, Description: "Observation (runs beside control calls). " + desc,
			Profile: protocol.ProfileDeviceV1, Mode: connector.ToolObserve}
	}
	act := func(title, desc string) connector.ToolOptions {
		return connector.ToolOptions{Title: title, Description: "Control (one at a time per device; a repeated tool_call_id returns the first result). " + desc,
			Profile: protocol.ProfileDeviceV1, Mode: connector.ToolAct, SideEffect: true}
	}
	return []error{
		connector.AddTool(c.srv, ToolStatus, c.status, observe("Android Device Status",
			"Model, Android version, battery, screen on/off, screen size in pixels and the foreground app of the bound device.")),
		connector.AddTool(c.srv, ToolScreenshot, c.screenshot, observe("Android Screenshot",
			"A PNG of the screen as a file (file_ref and download_url), with its size in pixels.")),
		connector.AddTool(c.srv, ToolUIDump, c.uiDump, observe("Android UI Dump",
			"The accessibility tree of the screen as a bounded list of the elements that have text or can be used: text, description, resource id, bounds and the centre to tap.")),
		connector.AddTool(c.srv, ToolTap, c.tap, act("Android Tap", "Tap one point of the screen, in pixels.")),
		connector.AddTool(c.srv, ToolSwipe, c.swipe, act("Android Swipe", "Swipe from one point to another, in pixels.")),
		connector.AddTool(c.srv, ToolTextInput, c.textInput, act("Android Text Input", "Type printable ASCII text into the focused field.")),
		connector.AddTool(c.srv, ToolKey, c.key, act("Android Key", "Press one key: back, home, recents, power, volume_up, volume_down or enter.")),
		connector.AddTool(c.srv, ToolAppLaunch, c.appLaunch, act("Android App Launch", "Start an installed app by its package name.")),
	}
}

// deviceOf returns the call's device client.
func (c *Connector) deviceOf(call *connector.Call) (*device, error) {
	return c.clients.Get(call.Channel)
}

// run executes one command of a tool call, classifying its failure.
func (d *device) run(ctx context.Context, timeout time.Duration, limit int64, argv ...string) ([]byte, error) {
	out, err := d.c.exec(ctx, d.serial, timeout, limit, argv...)
	if err != nil {
		return out, d.failed(ctx, err)
	}
	return out, nil
}

func (c *Connector) status(ctx context.Context, call *connector.Call, _ NoInput) (Status, error) {
	d, err := c.deviceOf(call)
	if err != nil {
		return Status{}, err
	}
	var st Status
	prop := func(name string) (string, error) {
		out, err := d.run(ctx, c.cmdTimeout, MaxCommandOutput, "getprop", name)
		return strings.TrimSpace(string(out)), err
	}
	if st.Model, err = prop("ro.product.model"); err != nil {
		return Status{}, err
	}
	if st.Manufacturer, err = prop("ro.product.manufacturer"); err != nil {
		return Status{}, err
	}
	if st.AndroidVersion, err = prop("ro.build.version.release"); err != nil {
		return Status{}, err
	}
	sdk, err := prop("ro.build.version.sdk")
	if err != nil {
		return Status{}, err
	}
	st.SDKLevel, _ = strconv.Atoi(sdk)
	out, err := d.run(ctx, c.cmdTimeout, MaxCommandOutput, "dumpsys", "battery")
	if err != nil {
		return Status{}, err
	}
	st.BatteryLevel, st.Charging = parseBattery(out)
	if out, err = d.run(ctx, c.cmdTimeout, MaxCommandOutput, "dumpsys", "power"); err != nil {
		return Status{}, err
	}
	st.ScreenOn = parseScreenOn(out)
	if st.ScreenWidth, st.ScreenHeight, err = d.size(ctx); err != nil {
		return Status{}, err
	}
	if out, err = d.run(ctx, c.cmdTimeout, MaxCommandOutput, "dumpsys", "window", "displays"); err != nil && protocol.CodeOf(err, "") != protocol.CodeToolInvokeFailed {
		return Status{}, err
	}
	st.ForegroundApp, st.ForegroundActivity = parseForeground(out)
	if st.Model == "" && st.AndroidVersion == "" {
		if err := d.gone(ctx); err != nil {
			return Status{}, err
		}
	}
	return st, nil
}

// size returns the screen size in pixels (wm size: the override size
// when one is set, else the physical size).
func (d *device) size(ctx context.Context) (int, int, error) {
	out, err := d.run(ctx, d.c.cmdTimeout, MaxCommandOutput, "wm", "size")
	if err != nil {
		return 0, 0, err
	}
	w, h, ok := parseWMSize(out)
	if !ok {
		if err := d.gone(ctx); err != nil {
			return 0, 0, err
		}
		return 0, 0, protocol.Errorf(protocol.CodeToolInvokeFailed, "the device did not report its screen size")
	}
	return w, h, nil
}

var pngTrailer = []byte("\x00\x00\x00\x00IEND\xaeB`\x82")

func (c *Connector) screenshot(ctx context.Context, call *connector.Call, _ NoInput) (Screenshot, error) {
	d, err := c.deviceOf(call)
	if err != nil {
		return Screenshot{}, err
	}
	_ = call.Progress(ctx, "running", "capturing the screen", nil)
	out, err := d.run(ctx, c.shotTimeout, MaxScreenshotBytes, "screencap", "-p")
	if err != nil {
		return Screenshot{}, err
	}
	if !bytes.HasPrefix(out, []byte("\x89PNG\r\n\x1a\n")) || !bytes.HasSuffix(out, pngTrailer) {
		if err := d.gone(ctx); err != nil {
			return Screenshot{}, err
		}
		return Screenshot{}, protocol.Errorf(protocol.CodeToolInvokeFailed, "screencap did not return a complete PNG (is the screen secure or the device locked by policy?)")
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(out))
	if err != nil {
		return Screenshot{}, protocol.Errorf(protocol.CodeToolInvokeFailed, "screencap returned an unreadable PNG")
	}
	_ = call.Progress(ctx, "running", "storing the screenshot", nil)
	f, err := call.Channel.CacheMedia(ctx, connector.OutgoingFile{
		Name: "screenshot-" + time.Now().UTC().Format("20060102-150405") + ".png", MimeType: "image/png",
		Type: protocol.FileImage, Content: bytes.NewReader(out)}, c.shotTTL)
	if err != nil {
		return Screenshot{}, fmt.Errorf("cache screenshot: %w", err)
	}
	d.keepShot(ctx, f.FileRef)
	return Screenshot{File: f, Width: cfg.Width, Height: cfg.Height}, nil
}

// keepShot records a new screenshot and deletes the oldest beyond the
// channel's capacity.
func (d *device) keepShot(ctx context.Context, ref string) {
	d.mu.Lock()
	d.shots = append(d.shots, ref)
	var evict []string
	if n := len(d.shots) - d.c.maxShots; n > 0 {
		evict = append(evict, d.shots[:n]...)
		d.shots = append([]string(nil), d.shots[n:]...)
	}
	d.mu.Unlock()
	for _, r := range evict {
		if err := d.ch.DeleteFile(ctx, r); err != nil {
			d.c.log.Warn("adb: evict screenshot", "err", err.Error())
		}
	}
}

func (c *Connector) uiDump(ctx context.Context, call *connector.Call, _ NoInput) (UIDump, error) {
	d, err := c.deviceOf(call)
	if err != nil {
		return UIDump{}, err
	}
	// A file of this call's own, so that parallel dumps do not clobber
	// each other; removed afterwards.
	path := "/data/local/tmp/xconn-ui-" + connector.NewID("")[:16] + ".xml"
	out, err := d.run(ctx, c.cmdTimeout, MaxCommandOutput, "uiautomator", "dump", path)
	if err != nil {
		return UIDump{}, err
	}
	if !bytes.Contains(out, []byte("dumped to")) {
		if err := d.gone(ctx); err != nil {
			return UIDump{}, err
		}
		return UIDump{}, protocol.Errorf(protocol.CodeToolInvokeFailed, "uiautomator could not dump the screen: %s", firstLine(out))
	}
	xml, err := d.run(ctx, c.cmdTimeout, MaxUIXMLBytes, "cat", path)
	_, _ = d.c.exec(context.WithoutCancel(ctx), d.serial, c.cmdTimeout, MaxCommandOutput, "rm", "-f", path)
	if err != nil {
		return UIDump{}, err
	}
	dump, err := ParseUI(xml)
	if err != nil {
		return UIDump{}, protocol.Errorf(protocol.CodeToolInvokeFailed, "the accessibility dump does not parse")
	}
	return dump, nil
}

// firstLine is the first line of a command's output, bounded, for an
// error message (device output holds no secrets of the connector).
func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if r := []rune(line); len(r) > 120 {
		line = string(r[:120])
	}
	return line
}

// act runs a control command under the device's act lock and turns any
// output into a failure: input, on success, prints nothing.
func (d *device) act(ctx context.Context, call *connector.Call, action string, argv ...string) (Done, error) {
	_ = call.Progress(ctx, "running", action, nil)
	d.actMu.Lock()
	defer d.actMu.Unlock()
	out, err := d.run(ctx, d.c.cmdTimeout, MaxCommandOutput, argv...)
	if err != nil {
		return Done{}, err
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		return Done{}, protocol.Errorf(protocol.CodeToolInvokeFailed, "the device refused %s: %s", action, firstLine(out))
	}
	return Done{OK: true, Action: action}, nil
}

// inScreen checks points against the screen: a point must be inside
// w×h, or inside h×w when the device is turned to landscape (wm size
// reports the portrait size).
func inScreen(w, h int, pts ...[2]int) error {
	ok := func(x, y, w, h int) bool { return x >= 0 && y >= 0 && x < w && y < h }
	portrait, landscape := true, true
	for _, p := range pts {
		portrait = portrait && ok(p[0], p[1], w, h)
		landscape = landscape && ok(p[0], p[1], h, w)
	}
	if portrait || landscape {
		return nil
	}
	return protocol.Errorf(protocol.CodeInvalidArguments, "the point is outside the %dx%d screen (x from 0 to %d, y from 0 to %d; swapped in landscape)", w, h, w-1, h-1)
}

func (c *Connector) tap(ctx context.Context, call *connector.Call, in TapInput) (Done, error) {
	d, err := c.deviceOf(call)
	if err != nil {
		return Done{}, err
	}
	w, h, err := d.size(ctx)
	if err != nil {
		return Done{}, err
	}
	if err := inScreen(w, h, [2]int{in.X, in.Y}); err != nil {
		return Done{}, err
	}
	r, err := d.act(ctx, call, "tap", "input", "tap", strconv.Itoa(in.X), strconv.Itoa(in.Y))
	r.Detail = fmt.Sprintf("tapped %d,%d", in.X, in.Y)
	return r, err
}

func (c *Connector) swipe(ctx context.Context, call *connector.Call, in SwipeInput) (Done, error) {
	d, err := c.deviceOf(call)
	if err != nil {
		return Done{}, err
	}
	ms := 300
	if in.DurationMS != nil {
		ms = *in.DurationMS
	}
	if ms < 50 || ms > 5000 {
		return Done{}, protocol.Errorf(protocol.CodeInvalidArguments, "duration_ms must be from 50 to 5000")
	}
	w, h, err := d.size(ctx)
	if err != nil {
		return Done{}, err
	}
	if err := inScreen(w, h, [2]int{in.X1, in.Y1}, [2]int{in.X2, in.Y2}); err != nil {
		return Done{}, err
	}
	r, err := d.act(ctx, call, "swipe", "input", "swipe", strconv.Itoa(in.X1), strconv.Itoa(in.Y1),
		strconv.Itoa(in.X2), strconv.Itoa(in.Y2), strconv.Itoa(ms))
	r.Detail = fmt.Sprintf("swiped %d,%d to %d,%d in %d ms", in.X1, in.Y1, in.X2, in.Y2, ms)
	return r, err
}

func (c *Connector) textInput(ctx context.Context, call *connector.Call, in TextInput) (Done, error) {
	chunks, err := textChunks(in.Text)
	if err != nil {
		return Done{}, err
	}
	d, err := c.deviceOf(call)
	if err != nil {
		return Done{}, err
	}
	for _, ch := range chunks {
		if _, err := d.act(ctx, call, "text input", "input", "text", ch); err != nil {
			return Done{}, err
		}
	}
	// The text itself is not echoed: it may be sensitive (Device Profile §7).
	return Done{OK: true, Action: "text input", Detail: fmt.Sprintf("typed %d characters", len(in.Text))}, nil
}

// textChunks checks text (1 to MaxTextInput printable ASCII characters)
// and encodes it for `input text`, which reads "%s" as a space: spaces
// become %s, and a literal "%s" is split across two commands so that it
// is typed as written. The shell never sees the text unquoted (adb.Quote).
func textChunks(text string) ([]string, error) {
	if text == "" || len(text) > MaxTextInput {
		return nil, protocol.Errorf(protocol.CodeInvalidArguments, "text must be 1 to %d characters", MaxTextInput)
	}
	for i := 0; i < len(text); i++ {
		if text[i] < 0x20 || text[i] > 0x7e {
			return nil, protocol.Errorf(protocol.CodeInvalidArguments,
				"text may hold only printable ASCII characters (character %d is not): Android's input command cannot type others", i+1)
		}
	}
	var out []string
	var cur strings.Builder
	for i := 0; i < len(text); i++ {
		ch := text[i]
		if ch == 's' && i > 0 && text[i-1] == '%' {
			out = append(out, cur.String())
			cur.Reset()
		}
		if ch == ' ' {
			cur.WriteString("%s")
		} else {
			cur.WriteByte(ch)
		}
	}
	return append(out, cur.String()), nil
}

func (c *Connector) key(ctx context.Context, call *connector.Call, in KeyInput) (Done, error) {
	code, ok := keyCodes[in.Key]
	if !ok { // the schema's enum already refused it
		return Done{}, protocol.Errorf(protocol.CodeInvalidArguments, "key must be one of back, home, recents, power, volume_up, volume_down, enter")
	}
	d, err := c.deviceOf(call)
	if err != nil {
		return Done{}, err
	}
	r, err := d.act(ctx, call, "key", "input", "keyevent", code)
	r.Detail = "pressed " + in.Key
	return r, err
}

func (c *Connector) appLaunch(ctx context.Context, call *connector.Call, in AppLaunchInput) (Done, error) {
	if len(in.Package) > 255 || !packagePattern.MatchString(in.Package) {
		return Done{}, protocol.Errorf(protocol.CodeInvalidArguments, "package must be an application package name such as com.android.settings")
	}
	d, err := c.deviceOf(call)
	if err != nil {
		return Done{}, err
	}
	out, err := d.run(ctx, c.cmdTimeout, MaxCommandOutput, "pm", "path", in.Package)
	if err != nil {
		return Done{}, err
	}
	if !bytes.HasPrefix(bytes.TrimSpace(out), []byte("package:")) {
		return Done{}, protocol.Errorf(protocol.CodeInvalidArguments, "package %s is not installed on the device", in.Package)
	}
	_ = call.Progress(ctx, "running", "app launch", nil)
	d.actMu.Lock()
	defer d.actMu.Unlock()
	out, err = d.run(ctx, c.cmdTimeout, MaxCommandOutput, "monkey", "-p", in.Package, "-c", "android.intent.category.LAUNCHER", "1")
	if err != nil {
		return Done{}, err
	}
	if !bytes.Contains(out, []byte("Events injected: 1")) {
		return Done{}, protocol.Errorf(protocol.CodeToolInvokeFailed, "package %s has no launcher activity to start", in.Package)
	}
	return Done{OK: true, Action: "app launch", Detail: "started " + in.Package}, nil
}
