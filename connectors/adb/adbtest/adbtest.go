// Package adbtest is a fake ADB server for tests: it speaks the ADB host
// protocol on a loopback TCP listener (4-hex-digit length-prefixed
// requests, OKAY/FAIL answers, host:version, host:devices-l,
// host:transport:<serial>, then one exec: or shell: service whose output
// streams until the connection closes) and plays Android devices that
// answer the commands the device.adb connector runs with the output a
// real device gives.
//
// A test adds devices, changes their state (unauthorized, offline,
// detached), holds screenshots to make them slow, makes a device vanish in
// the middle of a command and reads back the commands each device ran.
// All methods are safe for concurrent use.
package adbtest

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Version is the protocol version host:version reports (adb 1.0.41).
const Version = 41

// Device is a fake Android device.
type Device struct {
	Serial string
	// State is "device" (default), "unauthorized", "offline" or
	// "no permissions".
	State   string
	Model   string // default "Pixel 7"
	Product string // default "panther"
	Name    string // device:, default "panther"
	// Release is ro.build.version.release (default "14"), SDK its API
	// level (default 34).
	Release string
	SDK     int
	// Width and Height are the physical screen size (default 1080x2400).
	Width, Height int
	// Battery is the level in percent (default 80); Charging says
	// whether a charger is connected.
	Battery  int
	Charging bool
	// ScreenOff makes dumpsys power report the screen asleep.
	ScreenOff bool
	// Foreground is the resumed activity (default the launcher).
	Foreground string
	// Packages are the installed packages (default a launcher and
	// com.android.settings); those in NoLauncher have no launcher
	// activity.
	Packages   []string
	NoLauncher []string
	// UIXML replaces the default accessibility dump.
	UIXML string
}

// Launcher is the default foreground activity.
const Launcher = "com.google.android.apps.nexuslauncher/.NexusLauncherActivity"

// Server is the fake ADB server. Create it with New, Start it, Close it.
type Server struct {
	mu       sync.Mutex
	ln       net.Listener
	devices  map[string]*device
	order    []string
	vanish   map[string]string // serial -> command name that makes it vanish mid-output
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
	closed   bool
	requests int
}

type device struct {
	Device
	transportID int
	cmds        [][]string
	files       map[string][]byte
	hold        chan struct{} // non-nil: screencap waits for it to close
	holding     int           // screencaps waiting on hold
}

// New returns an unstarted fake server without devices.
func New() *Server {
	return &Server{devices: map[string]*device{}, vanish: map[string]string{}, conns: map[net.Conn]struct{}{}}
}

// Start listens on a loopback port and returns its address (host:port).
// It panics when no port is free (a test cannot go on).
func (s *Server) Start() string {
	addr, err := s.Listen("127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("adbtest: %v", err))
	}
	return addr
}

// Listen serves on addr (such as 127.0.0.1:5037) and returns the address
// it listens on.
func (s *Server) Listen(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen %s: %w", addr, err)
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	s.wg.Add(1)
	go s.accept(ln)
	return ln.Addr().String(), nil
}

// Close stops the server, closes every connection and waits for them.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	for _, d := range s.devices {
		if d.hold != nil {
			close(d.hold)
			d.hold = nil
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// AddDevice attaches a device (replacing one with the same serial).
func (s *Server) AddDevice(d Device) {
	if d.State == "" {
		d.State = "device"
	}
	if d.Model == "" {
		d.Model = "Pixel 7"
	}
	if d.Product == "" {
		d.Product = "panther"
	}
	if d.Name == "" {
		d.Name = "panther"
	}
	if d.Release == "" {
		d.Release = "14"
	}
	if d.SDK == 0 {
		d.SDK = 34
	}
	if d.Width == 0 || d.Height == 0 {
		d.Width, d.Height = 1080, 2400
	}
	if d.Battery == 0 {
		d.Battery = 80
	}
	if d.Foreground == "" {
		d.Foreground = Launcher
	}
	if d.Packages == nil {
		d.Packages = []string{"com.google.android.apps.nexuslauncher", "com.android.settings"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.devices[d.Serial]; !ok {
		s.order = append(s.order, d.Serial)
	}
	s.devices[d.Serial] = &device{Device: d, transportID: len(s.order), files: map[string][]byte{}}
}

// SetState changes a device's state ("device", "unauthorized", "offline").
func (s *Server) SetState(serial, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.devices[serial]; d != nil {
		d.State = state
	}
}

// Remove detaches a device.
func (s *Server) Remove(serial string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeLocked(serial)
}

func (s *Server) removeLocked(serial string) {
	if d := s.devices[serial]; d != nil && d.hold != nil {
		close(d.hold)
		d.hold = nil
	}
	delete(s.devices, serial)
	s.order = slices.DeleteFunc(s.order, func(x string) bool { return x == serial })
}

// Update changes a device's fields under the server's lock.
func (s *Server) Update(serial string, f func(d *Device)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.devices[serial]; d != nil {
		f(&d.Device)
	}
}

// HoldScreenshots makes every screencap of serial wait until release is
// called (or the device goes away): a slow screenshot.
func (s *Server) HoldScreenshots(serial string) (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.devices[serial]
	if d == nil {
		return func() {}
	}
	ch := make(chan struct{})
	d.hold = ch
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if d.hold == ch {
				close(ch)
				d.hold = nil
			}
		})
	}
}

// HeldScreenshots returns how many screencaps of serial are waiting.
func (s *Server) HeldScreenshots(serial string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.devices[serial]; d != nil {
		return d.holding
	}
	return 0
}

// VanishOn makes serial disappear in the middle of the next command named
// name (its argv[0], such as "screencap"): part of the output is written,
// the device is detached and the connection closes.
func (s *Server) VanishOn(serial, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vanish[serial] = name
}

// Commands returns the argument vectors serial ran, in order.
func (s *Server) Commands(serial string) [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.devices[serial]; d != nil {
		out := make([][]string, len(d.cmds))
		for i, c := range d.cmds {
			out[i] = slices.Clone(c)
		}
		return out
	}
	return nil
}

// CountCommands counts the commands of serial whose argv starts with prefix.
func (s *Server) CountCommands(serial string, prefix ...string) int {
	n := 0
	for _, c := range s.Commands(serial) {
		if len(c) >= len(prefix) && slices.Equal(c[:len(prefix)], prefix) {
			n++
		}
	}
	return n
}

// Requests returns how many requests the server has read.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func (s *Server) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			_ = c.SetDeadline(time.Now().Add(time.Minute))
			s.serve(c)
		}()
	}
}

// readRequest reads one length-prefixed request.
func readRequest(r io.Reader) (string, error) {
	var hx [4]byte
	if _, err := io.ReadFull(r, hx[:]); err != nil {
		return "", err
	}
	n, err := strconv.ParseUint(string(hx[:]), 16, 16)
	if err != nil {
		return "", fmt.Errorf("bad length %q", hx[:])
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

func okay(w io.Writer) { io.WriteString(w, "OKAY") }

func fail(w io.Writer, msg string) { fmt.Fprintf(w, "FAIL%04x%s", len(msg), msg) }

func payload(w io.Writer, b []byte) { fmt.Fprintf(w, "OKAY%04x%s", len(b), b) }

// serve answers the requests of one connection, as the ADB server does:
// host services answer once; a transport switch is followed by one
// device service.
func (s *Server) serve(c net.Conn) {
	req, err := readRequest(c)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	switch {
	case req == "host:version":
		payload(c, fmt.Appendf(nil, "%04x", Version))
	case req == "host:devices-l" || req == "host:devices":
		payload(c, s.deviceList(req == "host:devices-l"))
	case strings.HasPrefix(req, "host:transport:"):
		serial := strings.TrimPrefix(req, "host:transport:")
		if msg := s.transportRefusal(serial); msg != "" {
			fail(c, msg)
			return
		}
		okay(c)
		svc, err := readRequest(c)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.requests++
		s.mu.Unlock()
		s.service(c, serial, svc)
	default:
		fail(c, "unknown host service")
	}
}

func (s *Server) deviceList(long bool) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b bytes.Buffer
	for _, serial := range s.order {
		d := s.devices[serial]
		if !long {
			fmt.Fprintf(&b, "%s\t%s\n", d.Serial, d.State)
			continue
		}
		switch d.State {
		case "device":
			fmt.Fprintf(&b, "%-22s device usb:1-%d product:%s model:%s device:%s transport_id:%d\n",
				d.Serial, d.transportID, d.Product, strings.ReplaceAll(d.Model, " ", "_"), d.Name, d.transportID)
		case "no permissions":
			fmt.Fprintf(&b, "%-22s no permissions (missing udev rules? user is in the plugdev group); see [http://developer.android.com/tools/device.html] usb:1-%d transport_id:%d\n",
				d.Serial, d.transportID, d.transportID)
		default:
			fmt.Fprintf(&b, "%-22s %s usb:1-%d transport_id:%d\n", d.Serial, d.State, d.transportID, d.transportID)
		}
	}
	return b.Bytes()
}

// transportRefusal is the FAIL message of host:transport:<serial>, or "".
func (s *Server) transportRefusal(serial string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.devices[serial]
	switch {
	case d == nil:
		return fmt.Sprintf("device '%s' not found", serial)
	case d.State == "unauthorized":
		return "device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set\nTry 'adb kill-server' if that seems wrong.\nOtherwise check for a confirmation dialog on your device."
	case d.State == "offline":
		return "device offline"
	case d.State == "no permissions":
		return "insufficient permissions for device: missing udev rules? user is in the plugdev group"
	case d.State != "device":
		return "device still " + d.State
	}
	return ""
}

// service runs exec:/shell: on serial and streams the output.
func (s *Server) service(c net.Conn, serial, svc string) {
	var line string
	switch {
	case strings.HasPrefix(svc, "exec:"):
		line = strings.TrimPrefix(svc, "exec:")
	case strings.HasPrefix(svc, "shell:"):
		line = strings.TrimPrefix(svc, "shell:")
	default:
		fail(c, "unknown service "+svc)
		return
	}
	argv, err := SplitCommand(line)
	if err != nil || len(argv) == 0 {
		okay(c)
		fmt.Fprintf(c, "/system/bin/sh: syntax error: %v\n", err)
		return
	}
	okay(c)
	s.mu.Lock()
	d := s.devices[serial]
	if d == nil {
		s.mu.Unlock()
		return
	}
	d.cmds = append(d.cmds, argv)
	vanish := s.vanish[serial] == argv[0]
	if vanish {
		delete(s.vanish, serial)
	}
	hold := d.hold
	if argv[0] == "screencap" && hold != nil {
		d.holding++
	}
	s.mu.Unlock()

	if argv[0] == "screencap" && hold != nil {
		<-hold
		s.mu.Lock()
		d.holding--
		gone := s.devices[serial] != d
		s.mu.Unlock()
		if gone {
			return
		}
	}
	out := s.run(d, argv)
	if vanish {
		_, _ = c.Write(out[:len(out)/2])
		s.Remove(serial)
		return
	}
	_, _ = c.Write(out)
}

// run answers one command as an Android 14 device does.
func (s *Server) run(d *device, argv []string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	arg := func(i int) string {
		if i < len(argv) {
			return argv[i]
		}
		return ""
	}
	switch argv[0] {
	case "getprop":
		switch arg(1) {
		case "ro.product.model":
			return []byte(d.Model + "\n")
		case "ro.build.version.release":
			return []byte(d.Release + "\n")
		case "ro.build.version.sdk":
			return []byte(strconv.Itoa(d.SDK) + "\n")
		case "ro.product.manufacturer":
			return []byte("Google\n")
		}
		return []byte("\n")
	case "dumpsys":
		switch arg(1) {
		case "battery":
			status := 3 // discharging
			if d.Charging {
				status = 2
			}
			return fmt.Appendf(nil, "Current Battery Service state:\n  AC powered: false\n  USB powered: %t\n  Wireless powered: false\n  Max charging current: 500000\n"+
				"  status: %d\n  health: 2\n  present: true\n  level: %d\n  scale: 100\n  voltage: 4215\n  temperature: 258\n  technology: Li-ion\n",
				d.Charging, status, d.Battery)
		case "power":
			wake, disp := "Awake", "ON"
			if d.ScreenOff {
				wake, disp = "Asleep", "OFF"
			}
			return fmt.Appendf(nil, "POWER MANAGER (dumpsys power)\n\nPower Manager State:\n  mDirty=0x0\n  mWakefulness=%s\n  mWakefulnessChanging=false\n  mIsPowered=true\n\nDisplay Power: state=%s\n", wake, disp)
		case "window":
			if arg(2) == "displays" {
				return fmt.Appendf(nil, "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n  Display: mDisplayId=0 rootTasks=3\n    init=%dx%d 420dpi\n"+
					"  mCurrentFocus=Window{5f3a2b1 u0 %s}\n  mFocusedApp=ActivityRecord{9c1d2e3 u0 %s t12}\n", d.Width, d.Height, d.Foreground, d.Foreground)
			}
		}
		return []byte("Can't find service: " + arg(1) + "\n")
	case "wm":
		if arg(1) == "size" {
			return fmt.Appendf(nil, "Physical size: %dx%d\n", d.Width, d.Height)
		}
	case "screencap":
		if arg(1) == "-p" {
			return screenshot(d.Width/10, d.Height/10)
		}
	case "uiautomator":
		if arg(1) == "dump" && arg(2) != "" {
			xml := d.UIXML
			if xml == "" {
				xml = defaultUI(d)
			}
			d.files[arg(2)] = []byte(xml)
			return []byte("UI hierchary dumped to: " + arg(2) + "\n")
		}
	case "cat":
		if b, ok := d.files[arg(1)]; ok {
			return slices.Clone(b)
		}
		return []byte("cat: " + arg(1) + ": No such file or directory\n")
	case "rm":
		for _, f := range argv[1:] {
			delete(d.files, f)
		}
		return nil
	case "input":
		return inputCommand(d, argv)
	case "pm":
		if arg(1) == "path" && len(argv) == 3 {
			if slices.Contains(d.Packages, arg(2)) {
				return []byte("package:/data/app/~~Xy12==/" + arg(2) + "-1/base.apk\n")
			}
			return nil
		}
	case "monkey":
		// monkey -p <package> -c android.intent.category.LAUNCHER 1
		if len(argv) == 6 && arg(1) == "-p" && arg(3) == "-c" && arg(5) == "1" {
			pkg := arg(2)
			if !slices.Contains(d.Packages, pkg) || slices.Contains(d.NoLauncher, pkg) {
				return []byte("  bash arg: -p\n  bash arg: " + pkg + "\n** No activities found to run, monkey aborted.\n")
			}
			d.Foreground = pkg + "/.MainActivity"
			return []byte("  bash arg: -p\n  bash arg: " + pkg + "\n  bash arg: -c\n  bash arg: android.intent.category.LAUNCHER\n  bash arg: 1\nargs: [-p, " + pkg + ", -c, android.intent.category.LAUNCHER, 1]\n" +
				" arg: \"-p\"\n arg: \"" + pkg + "\"\n data=\"" + pkg + "\"\nEvents injected: 1\n## Network stats: elapsed time=12ms (0ms mobile, 0ms wifi, 12ms not connected)\n")
		}
	}
	return []byte("/system/bin/sh: " + argv[0] + ": inaccessible or not found\n")
}

func inputCommand(d *device, argv []string) []byte {
	usage := []byte("Error: Unknown command\nUsage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]\n")
	if len(argv) < 2 {
		return usage
	}
	num := func(s string) bool { _, err := strconv.Atoi(s); return err == nil }
	switch argv[1] {
	case "tap":
		if len(argv) == 4 && num(argv[2]) && num(argv[3]) {
			return nil
		}
	case "swipe":
		if (len(argv) == 6 || len(argv) == 7) && num(argv[2]) && num(argv[3]) && num(argv[4]) && num(argv[5]) {
			return nil
		}
	case "text":
		if len(argv) == 3 {
			return nil
		}
	case "keyevent":
		if len(argv) >= 3 {
			if argv[2] == "KEYCODE_HOME" {
				d.Foreground = Launcher
			}
			return nil
		}
	}
	return usage
}

// screenshot is a small PNG (a real one is the full resolution; the
// connector only relays it).
func screenshot(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, max(w, 1), max(h, 1)))
	for y := range img.Rect.Dy() {
		for x := range img.Rect.Dx() {
			img.Set(x, y, color.RGBA{R: uint8(x), G: uint8(y), B: 200, A: 255})
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

func defaultUI(d *device) string {
	return `<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0">` +
		fmt.Sprintf(`<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.google.android.apps.nexuslauncher" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,0][%d,%d]">`, d.Width, d.Height) +
		`<node index="0" text="Settings" resource-id="com.google.android.apps.nexuslauncher:id/icon" class="android.widget.TextView" package="com.google.android.apps.nexuslauncher" content-desc="Settings" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="true" password="false" selected="false" bounds="[100,200][300,400]" />` +
		`<node index="1" text="Search &amp; more" resource-id="com.google.android.apps.nexuslauncher:id/search" class="android.widget.EditText" package="com.google.android.apps.nexuslauncher" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[40,2000][1040,2140]" />` +
		`</node></hierarchy>`
}

// SplitCommand splits a command line as a POSIX shell splits words,
// supporting what a careful client sends: plain words, single-quoted
// strings and backslash escapes outside quotes. Anything a shell would
// treat as an operator (; | & < > $ ` ( ) and double quotes) is an error,
// so a test sees every unquoted shell metacharacter.
func SplitCommand(line string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == ' ' || ch == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case ch == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated quoted string")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '\\':
			if i+1 >= len(line) {
				return nil, errors.New("trailing backslash")
			}
			cur.WriteByte(line[i+1])
			i++
			inWord = true
		case strings.IndexByte(";|&<>$`()\"\n*?[~#{}!", ch) >= 0:
			return nil, fmt.Errorf("unquoted shell metacharacter %q", ch)
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}
