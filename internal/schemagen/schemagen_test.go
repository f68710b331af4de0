package schemagen

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

type Inner struct {
	Name string `json:"name" desc:"inner name"`
}

type Embedded struct {
	Extra string `json:"extra,omitempty"`
}

type Full struct {
	Embedded
	Text     string          `json:"text" desc:"message text"`
	Mode     string          `json:"mode,omitempty" enum:"fast,slow"`
	Level    int             `json:"level" enum:"1,2,3"`
	Ratio    float64         `json:"ratio,omitzero"`
	Flag     bool            `json:"flag"`
	Opt      *string         `json:"opt"`
	Tags     []string        `json:"tags,omitempty"`
	Items    []Inner         `json:"items"`
	Child    *Inner          `json:"child,omitempty"`
	Labels   map[string]int  `json:"labels,omitempty"`
	AnyMap   map[string]any  `json:"any_map,omitempty"`
	When     time.Time       `json:"when"`
	Raw      json.RawMessage `json:"raw,omitempty"`
	Data     []byte          `json:"data,omitempty"`
	Skipped  string          `json:"-"`
	NoTag    string
	private  string
	Grid     [2][]uint8        `json:"grid,omitempty"`
	Nested   map[string]*Inner `json:"nested,omitempty"`
	Fraction float32           `json:"fraction" enum:"0.5,1.5"`
}

func TestFor(t *testing.T) {
	got, err := For[Full]()
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	want := `{"type":"object","properties":{` +
		`"extra":{"type":"string"},` +
		`"text":{"type":"string","description":"message text"},` +
		`"mode":{"type":"string","enum":["fast","slow"]},` +
		`"level":{"type":"integer","enum":[1,2,3]},` +
		`"ratio":{"type":"number"},` +
		`"flag":{"type":"boolean"},` +
		`"opt":{"type":"string"},` +
		`"tags":{"type":"array","items":{"type":"string"}},` +
		`"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","description":"inner name"}},"required":["name"],"additionalProperties":false}},` +
		`"child":{"type":"object","properties":{"name":{"type":"string","description":"inner name"}},"required":["name"],"additionalProperties":false},` +
		`"labels":{"type":"object","additionalProperties":{"type":"integer"}},` +
		`"any_map":{"type":"object","additionalProperties":true},` +
		`"when":{"type":"string","format":"date-time"},` +
		`"raw":{},` +
		`"data":{"type":"string","contentEncoding":"base64"},` +
		`"NoTag":{"type":"string"},` +
		`"grid":{"type":"array","items":{"type":"string","contentEncoding":"base64"}},` +
		`"nested":{"type":"object","additionalProperties":{"type":"object","properties":{"name":{"type":"string","description":"inner name"}},"required":["name"],"additionalProperties":false}},` +
		`"fraction":{"type":"number","enum":[0.5,1.5]}` +
		`},"required":["text","level","flag","items","when","NoTag","fraction"],"additionalProperties":false}`
	if string(got) != want {
		t.Fatalf("schema mismatch\n got: %s\nwant: %s", got, want)
	}
	if !json.Valid(got) {
		t.Fatal("output is not valid JSON")
	}
	again, _ := FromType(reflect.TypeFor[*Full]())
	if string(again) != string(got) {
		t.Fatal("output differs between calls / pointer root")
	}
}

type (
	withChan    struct{ C chan int }
	withFunc    struct{ F func() }
	withComplex struct{ C complex128 }
	withIntKey  struct{ M map[int]string }
	withIface   struct{ S fmt.Stringer }
	recursive   struct{ Next *recursive }
	badEnumInt  struct {
		N int `json:"n" enum:"a"`
	}
	enumOnArray struct {
		A []string `json:"a" enum:"x"`
	}
)

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"nil", nil, "nil type"},
		{"int root", reflect.TypeFor[int](), "not a struct"},
		{"time root", reflect.TypeFor[time.Time](), "not a struct"},
		{"slice root", reflect.TypeFor[[]Inner](), "not a struct"},
		{"chan", reflect.TypeFor[withChan](), "unsupported type chan int"},
		{"func", reflect.TypeFor[withFunc](), "unsupported type func()"},
		{"complex", reflect.TypeFor[withComplex](), "unsupported type complex128"},
		{"int map key", reflect.TypeFor[withIntKey](), "only string keys"},
		{"interface with methods", reflect.TypeFor[withIface](), "unsupported type fmt.Stringer"},
		{"recursive", reflect.TypeFor[recursive](), "recursive type"},
		{"bad enum", reflect.TypeFor[badEnumInt](), `enum value "a" is not an integer`},
		{"enum on array", reflect.TypeFor[enumOnArray](), "enum is supported on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromType(tt.typ)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("FromType = %s, %v; want error containing %q", got, err, tt.want)
			}
		})
	}
}

func TestEmptyStruct(t *testing.T) {
	got, err := For[struct{}]()
	if err != nil || string(got) != `{"type":"object","properties":{},"additionalProperties":false}` {
		t.Fatalf("For[struct{}] = %s, %v", got, err)
	}
}

func ExampleFor() {
	type SendInput struct {
		Text     string `json:"text" desc:"Message text"`
		Priority string `json:"priority,omitempty" enum:"low,high"`
	}
	s, err := For[SendInput]()
	if err != nil {
		panic(err)
	}
	fmt.Println(string(s))
	// Output:
	// {"type":"object","properties":{"text":{"type":"string","description":"Message text"},"priority":{"type":"string","enum":["low","high"]}},"required":["text"],"additionalProperties":false}
}

type Base struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type Shadow struct {
	Base
	Name int `json:"name,omitempty"`
}

func TestOuterFieldHidesEmbedded(t *testing.T) {
	got, err := For[Shadow]()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"integer"}},"required":["id"],"additionalProperties":false}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
