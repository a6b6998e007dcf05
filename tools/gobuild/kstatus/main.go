// kstatus prints what sigs.k8s.io/cli-utils' kstatus (the library Flux, kpt and cli-utils' own
// apply read resource health with) computes for Kubernetes objects: status.Compute on each object,
// exactly as those tools call it, with no cluster access.
//
//	kstatus [FILE...]      # JSON or YAML objects (several per file with ---, or a List); - or none: stdin
//
// Prints one JSON object per input object, one per line:
//
//	{"kind":"GenericJob","name":"demo","status":"Current","message":"Resource is Ready","conditions":[...]}
//
// Exit status 0 when every object was read and computed, 1 otherwise (the error goes to stderr).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type result struct {
	Kind       string             `json:"kind"`
	Namespace  string             `json:"namespace,omitempty"`
	Name       string             `json:"name"`
	Status     string             `json:"status"`
	Message    string             `json:"message"`
	Conditions []status.Condition `json:"conditions"`
}

func main() {
	args := os.Args[1:]
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Println("usage: kstatus [FILE...]   (JSON or YAML Kubernetes objects; no FILE or -: stdin)")
		return
	}
	if len(args) == 0 {
		args = []string{"-"}
	}
	out := json.NewEncoder(os.Stdout)
	failed := false
	for _, path := range args {
		if err := run(path, out); err != nil {
			fmt.Fprintf(os.Stderr, "kstatus: %s: %v\n", path, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func run(path string, out *json.Encoder) error {
	var in io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(in), 4096)
	for {
		var raw json.RawMessage
		if err := decoder.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue // an empty document
		}
		// As a client reads objects: integers stay int64, as kstatus expects them.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return err
		}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return err
			}
			for i := range list.Items {
				if err := compute(&list.Items[i], out); err != nil {
					return err
				}
			}
			continue
		}
		if err := compute(u, out); err != nil {
			return err
		}
	}
}

func compute(u *unstructured.Unstructured, out *json.Encoder) error {
	res, err := status.Compute(u)
	if err != nil {
		return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	conditions := res.Conditions
	if conditions == nil {
		conditions = []status.Condition{}
	}
	return out.Encode(result{
		Kind:       u.GetKind(),
		Namespace:  u.GetNamespace(),
		Name:       u.GetName(),
		Status:     res.Status.String(),
		Message:    res.Message,
		Conditions: conditions,
	})
}
