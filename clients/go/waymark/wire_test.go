package waymark

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	// Registers google.rpc.ErrorInfo and BadRequest, which the error fixtures pack in Any.
	_ "google.golang.org/genproto/googleapis/rpc/errdetails"
	_ "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
)

type fixture struct {
	Type   string          `json:"type"`
	JSON   json.RawMessage `json:"json"`
	Binary string          `json:"binary"`
}

// The shared fixtures in test/wire are written by scripts/wire-fixtures.ts (protobuf-es). Each
// must decode to the same message from JSON and from binary, print back to the same JSON, and
// re-encode to the same bytes: the Go client and the server agree on the wire.
func TestWireFixtures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "test", "wire", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures found in test/wire (err %v)", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var f fixture
			if err := json.Unmarshal(raw, &f); err != nil {
				t.Fatal(err)
			}
			mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(f.Type))
			if err != nil {
				t.Fatalf("type %s: %v", f.Type, err)
			}
			wire, err := base64.StdEncoding.DecodeString(f.Binary)
			if err != nil {
				t.Fatal(err)
			}
			fromBinary := mt.New().Interface()
			if err := proto.Unmarshal(wire, fromBinary); err != nil {
				t.Fatalf("binary: %v", err)
			}
			fromJSON := mt.New().Interface()
			if err := protojson.Unmarshal(f.JSON, fromJSON); err != nil {
				t.Fatalf("json: %v", err)
			}
			if !proto.Equal(fromBinary, fromJSON) {
				t.Fatalf("binary and JSON decode differently:\n binary %v\n json   %v", fromBinary, fromJSON)
			}
			again, err := proto.MarshalOptions{Deterministic: true}.Marshal(fromJSON)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, wire) {
				t.Fatalf("re-encoding differs:\n got  %s\n want %s", base64.StdEncoding.EncodeToString(again), f.Binary)
			}
			printed, err := protojson.Marshal(fromBinary)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			_ = json.Unmarshal(printed, &got)
			_ = json.Unmarshal(f.JSON, &want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("printed JSON differs:\n got  %s\n want %s", printed, f.JSON)
			}
		})
	}
}
