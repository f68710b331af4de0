// Package adb is the Android connector (Card device.adb, provider adb,
// target type device, Device Profile v1): each channel is bound to one
// Android device attached to an ADB server (127.0.0.1:5037 by default),
// which the connector reaches with its own client of the ADB host
// protocol (package adbhost), never through an adb binary or a shell.
//
// A user signs in with the adb_device_binding form: the serial of a
// device that `adb devices` lists. The sign-in checks that the device is
// attached and has authorised the computer (an unauthorised device gets a
// message asking to accept the RSA prompt). A device is exclusive to one
// channel: a second channel signing in with the same serial is refused.
//
// Tools: android_device_status, android_screenshot and android_ui_dump
// observe (connector.ToolObserve: they run in parallel, also beside a
// control action); android_tap, android_swipe, android_text_input,
// android_key and android_app_launch act (connector.ToolAct: one at a time
// per device, idempotent by tool_call_id). Screenshots are transfer plane
// files (file_ref and download_url), bounded in number and lifetime per
// channel. No tool runs an arbitrary command; every argument reaches the
// device's shell single-quoted.
//
// One watcher per bound serial reads the device list every PollInterval
// and corrects the channel's Descriptor (connected, offline, or tools
// denied by the target) and pushes it. After a restart a restored channel
// stays offline until its device answers. Failures carry the SDK's device
// codes: connector.CodeDeviceOffline, CodeDeviceCommandTimeout and
// CodeDevicePermissionDenied. README.md documents every limit and policy.
//
// adbtest is a fake ADB server for tests.
package adb
