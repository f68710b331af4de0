package main

import (
	"github.com/xconn/xconn/connector"
)

// The data directory rule of every command: --data is one connector's (or
// the host's), the lock is on --data itself, and it is taken first, before
// anything is printed or opened. Each serve command has its own default,
// so that two connectors started with their defaults never share keys or
// files.
const (
	dataDirWebchat  = "./xconn-data" // serve webchat and demo: the same connector's state
	dataDirWechat   = "./xconn-wechat-data"
	dataDirTelegram = "./xconn-telegram-data"
	dataDirFeishu   = "./xconn-feishu-data"
	dataDirADB      = "./xconn-adb-data"
)

// ownerHost is the owner a data directory of "xconn host" records.
const ownerHost = "xconn host"

// lockDataDir takes the exclusive lock on dir (as the user typed it) and
// claims it for owner (a card id, or ownerHost). Another process on dir,
// or a dir that belongs to another owner, is one line and exit 1.
func lockDataDir(dir, owner string) (*connector.DataDirLock, error) {
	lock, err := connector.LockDataDir(dir)
	if err != nil {
		return nil, &exitError{code: 1, err: err}
	}
	if err := lock.Claim(owner); err != nil {
		lock.Close()
		return nil, &exitError{code: 1, err: err}
	}
	return lock, nil
}
