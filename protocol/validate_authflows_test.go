package protocol

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestValidateAuthFlowsRequired: each member the "auth_flows[] fields" table
// of section 4.1 marks Required is reported, with its path, when missing;
// a target_type must be one of supports.target_types; one mistake is one
// violation.
func TestValidateAuthFlowsRequired(t *testing.T) {
	qr := func() AuthFlow {
		return AuthFlow{ID: "qr", TargetType: TargetIM, Type: AuthFlowQRLogin, Title: "Scan"}
	}
	form := func() AuthFlow {
		return AuthFlow{ID: "room", TargetType: TargetIM, Type: AuthFlowForm, Title: "Room",
			Fields: []AuthField{{Name: "room", Label: "Room", InputType: InputText}}}
	}
	tests := []struct {
		name    string
		flows   []AuthFlow
		targets []TargetType // supports.target_types; nil means ["im"]
		want    []string     // every violation, "path: reason"
	}{
		{name: "complete qr and form", flows: []AuthFlow{qr(), form()}},
		{name: "no flows", flows: nil},
		{name: "title missing", flows: []AuthFlow{func() AuthFlow { f := qr(); f.Title = ""; return f }()},
			want: []string{"auth_flows[0].title: is required"}},
		{name: "target_type missing", flows: []AuthFlow{qr(), func() AuthFlow { f := form(); f.TargetType = ""; return f }()},
			want: []string{"auth_flows[1].target_type: is required"}},
		{name: "id missing", flows: []AuthFlow{func() AuthFlow { f := qr(); f.ID = ""; return f }()},
			want: []string{"auth_flows[0].id: is required"}},
		{name: "type missing", flows: []AuthFlow{func() AuthFlow { f := qr(); f.Type = ""; return f }()},
			want: []string{"auth_flows[0].type: is required"}},
		{name: "all four missing", flows: []AuthFlow{{}},
			want: []string{"auth_flows[0].id: is required", "auth_flows[0].target_type: is required",
				"auth_flows[0].type: is required", "auth_flows[0].title: is required"}},
		{name: "form fields missing", flows: []AuthFlow{func() AuthFlow { f := form(); f.Fields = nil; return f }()},
			want: []string{"auth_flows[0].fields: a form flow needs at least one field"}},
		{name: "target_type not declared", flows: []AuthFlow{func() AuthFlow { f := qr(); f.TargetType = TargetEmail; return f }()},
			want: []string{`auth_flows[0].target_type: "email" is not in supports.target_types [im]`}},
		{name: "target_type declared second", flows: []AuthFlow{func() AuthFlow { f := qr(); f.TargetType = TargetEmail; return f }()},
			targets: []TargetType{TargetIM, TargetEmail}},
		{name: "target_type unknown reported once", flows: []AuthFlow{func() AuthFlow { f := qr(); f.TargetType = "chat"; return f }()},
			want: []string{`auth_flows[0].target_type: must be one of [im email calendar ticket device], not "chat"`}},
		{name: "no supported target types", flows: []AuthFlow{qr()}, targets: []TargetType{},
			want: []string{`auth_flows[0].target_type: "im" is not in supports.target_types []`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			targets := tc.targets
			if targets == nil {
				targets = []TargetType{TargetIM}
			}
			c := &Card{Supports: Supports{TargetTypes: targets}, AuthFlows: tc.flows}
			var got []string
			for _, v := range append(ValidateAuthFlows(c.AuthFlows), ValidateAuthFlowTargets(c)...) {
				got = append(got, v.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("violations\n got %q\nwant %q", got, tc.want)
			}
			// ValidateCard reports the same auth_flows violations, no more.
			var inCard []string
			for _, v := range ValidateCard(c) {
				if strings.HasPrefix(v.Path, "auth_flows") {
					inCard = append(inCard, v.String())
				}
			}
			if !slices.Equal(inCard, tc.want) {
				t.Fatalf("ValidateCard auth_flows violations\n got %q\nwant %q", inCard, tc.want)
			}
		})
	}
}

// TestValidateCardJSONAuthFlowRequired: the official schema does not require
// target_type and title, but ValidateCardJSON does, at the same paths.
func TestValidateCardJSONAuthFlowRequired(t *testing.T) {
	c := vSpecCard(t)
	c.AuthFlows[0].Title = ""
	c.AuthFlows[1].TargetType = ""
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if vs := ValidateSchema(SchemaCard, data); len(vs) > 0 {
		t.Fatalf("the schema should accept the Card, got %v", vs)
	}
	_, vs := ValidateCardJSON(data)
	for _, want := range []string{"auth_flows[0].title: is required", "auth_flows[1].target_type: is required"} {
		if !slices.ContainsFunc(vs, func(v Violation) bool { return v.String() == want }) {
			t.Errorf("missing %q in %v", want, vs)
		}
	}
	if len(vs) != 2 {
		t.Errorf("want exactly 2 violations, got %v", vs)
	}
}

func TestValidateAuthFlowTargetsNil(t *testing.T) {
	if vs := ValidateAuthFlowTargets(nil); vs != nil {
		t.Fatalf("nil card: %v", vs)
	}
}
