package store

import (
	"path/filepath"
	"testing"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/delivery/deliverytest"
)

// TestDeliveryStorage runs the delivery storage suite on both backends,
// a fresh database per case.
func TestDeliveryStorage(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		deliverytest.TestStorage(t, func(t *testing.T) delivery.Storage {
			return openDB(t, "sqlite:"+filepath.Join(t.TempDir(), "d.db"), Options{})
		})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		if testing.Short() {
			t.Skip("short")
		}
		deliverytest.TestStorage(t, func(t *testing.T) delivery.Storage { return openDB(t, postgresDSN(t), Options{}) })
	})
}
