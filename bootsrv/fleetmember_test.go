package bootsrv

import (
	"encoding/json"
	"testing"
)

func TestMemberInfoJSON(t *testing.T) {
	b, err := json.Marshal(MemberInfo{URL: "http://10.0.0.1:8080", Address: "10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"url":"http://10.0.0.1:8080","address":"10.0.0.1"}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
