package delivery_test

import (
	"testing"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/delivery/deliverytest"
)

func TestMemoryStorage(t *testing.T) {
	deliverytest.TestStorage(t, func(t *testing.T) delivery.Storage { return delivery.NewMemoryStorage(0) })
}
