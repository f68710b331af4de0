package protocol

import (
	"os"
	"testing"
)

func BenchmarkValidateCard(b *testing.B) {
	data, err := os.ReadFile("testdata/spec_card.json")
	if err != nil {
		b.Fatal(err)
	}
	c := vSpecCard(b)
	b.Run("struct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if vs := ValidateCard(c); len(vs) > 0 {
				b.Fatal(vs)
			}
		}
	})
	b.Run("json+schema", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, vs := ValidateCardJSON(data); len(vs) > 0 {
				b.Fatal(vs)
			}
		}
	})
}

func BenchmarkValidateDescriptor(b *testing.B) {
	data, err := os.ReadFile("testdata/spec_descriptor.json")
	if err != nil {
		b.Fatal(err)
	}
	d, c := vSpecDescriptor(b), vSpecCard(b)
	b.Run("struct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if vs := append(ValidateDescriptor(d), ValidateDescriptorAgainstCard(d, c, "cch_conn_im_wechat_xxx")...); len(vs) > 0 {
				b.Fatal(vs)
			}
		}
	})
	b.Run("json+schema", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, vs := ValidateDescriptorJSON(data, c); len(vs) > 0 {
				b.Fatal(vs)
			}
		}
	})
}

func BenchmarkDecodeEnvelope(b *testing.B) {
	data := []byte(vPacketSeeds()[3]) // a chat.message with a file
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := DecodeEnvelope(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeEnvelope(b *testing.B) {
	e, err := DecodeEnvelope([]byte(vPacketSeeds()[3]))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidatePacketJSON(b *testing.B) {
	data := []byte(vPacketSeeds()[3])
	b.ReportAllocs()
	for b.Loop() {
		if _, vs := ValidatePacketJSON(data, ToHost); len(vs) > 0 {
			b.Fatal(vs)
		}
	}
}
