// argocd-lua runs an Argo CD resource health script (health.lua) against one Kubernetes object, in
// the environment Argo CD v3.6.1 gives it (util/lua/lua.go, ExecuteHealthLua):
//
//   - gopher-lua v1.1.2, the interpreter Argo CD embeds;
//   - only the libraries Argo CD opens: package, base, table and its safe os (os.time, os.date);
//     string, math, io, coroutine, debug and channel are NOT available unless --open-libs is
//     given (Argo CD's `useOpenLibs: true` in a resource customization, which its own unit tests
//     also use);
//   - a 1 second timeout;
//   - the object as the global `obj`, converted from JSON the way Argo CD's decodeValue does
//     (numbers become Lua numbers, JSON null and unknown types become nil, lists become sequences);
//   - the returned table encoded with layeh.com/gopher-json and decoded into {status, message};
//     a status Argo CD does not know becomes Unknown with "Lua returned an invalid health status",
//     an empty table becomes an empty status, nil means "no health".
//
// Argo CD v3.6.1 itself (github.com/argoproj/argo-cd/v3/util/lua) needs Go 1.27, so this runner
// mirrors it on the same gopher-lua instead of importing it (docs/how-to/argocd-health.md).
//
//	argocd-lua [--open-libs] SCRIPT.lua OBJECT.json   # OBJECT "-" reads standard input
//
// Output: one JSON line, {"status": ..., "message": ...} or null. A Lua error (what Argo CD shows as
// the resource's health, status Unknown with the error as message) prints "lua error: ..." to
// standard error and exits 1; bad usage or unreadable files exit 2.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"time"

	lua "github.com/yuin/gopher-lua"
	luajson "layeh.com/gopher-json"
)

const invalidHealthStatus = "Lua returned an invalid health status"

// healthStatus is gitops-engine's health.HealthStatus as far as JSON goes.
type healthStatus struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

var validStatus = map[string]bool{
	"Unknown": true, "Progressing": true, "Suspended": true, "Healthy": true, "Degraded": true,
	"Missing": true,
}

// decodeValue is Argo CD's util/lua decodeValue.
func decodeValue(l *lua.LState, value any) lua.LValue {
	switch converted := value.(type) {
	case bool:
		return lua.LBool(converted)
	case float64:
		return lua.LNumber(converted)
	case string:
		return lua.LString(converted)
	case json.Number:
		return lua.LString(converted)
	case int:
		return lua.LNumber(converted)
	case int32:
		return lua.LNumber(converted)
	case int64:
		return lua.LNumber(converted)
	case []any:
		arr := l.CreateTable(len(converted), 0)
		for _, item := range converted {
			arr.Append(decodeValue(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(converted))
		for key, item := range converted {
			tbl.RawSetH(lua.LString(key), decodeValue(l, item))
		}
		return tbl
	case nil:
		return lua.LNil
	}
	return lua.LNil
}

// toUnstructured decodes JSON as k8s.io/apimachinery's unstructured decoder does: integers that
// fit in int64 become int64, other numbers float64.
func toUnstructured(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		if f, err := t.Float64(); err == nil {
			return f
		}
		return string(t)
	case []any:
		for i := range t {
			t[i] = toUnstructured(t[i])
		}
		return t
	case map[string]any:
		for k := range t {
			t[k] = toUnstructured(t[k])
		}
		return t
	}
	return v
}

func run(script string, object map[string]any, openLibs bool) (*healthStatus, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: !openLibs})
	defer l.Close()
	for _, pair := range []struct {
		n string
		f lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.OsLibName, OpenSafeOs},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(pair.f), NRet: 0, Protect: true},
			lua.LString(pair.n)); err != nil {
			panic(err)
		}
	}
	l.PreloadModule(lua.OsLibName, SafeOsLoader)
	ctx, cancel := context.WithTimeout(context.Background(), 1*time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("actionParams", l.CreateTable(0, 0))
	l.SetGlobal("obj", decodeValue(l, object))

	fn, err := l.LoadString(script)
	if err == nil {
		l.Push(fn)
		err = l.PCall(0, lua.MultRet, nil)
	}
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) && apiErr.Type == lua.ApiErrorRun {
		apiErr.StackTrace = ""
		err = apiErr
	}
	if err != nil {
		return nil, err
	}
	returnValue := l.Get(-1)
	switch returnValue.Type() {
	case lua.LTTable:
		jsonBytes, err := luajson.Encode(returnValue)
		if err != nil {
			return nil, err
		}
		hs := &healthStatus{}
		if err := json.Unmarshal(jsonBytes, hs); err != nil {
			typeError := &json.UnmarshalTypeError{Value: "array", Type: reflect.TypeOf(hs)}
			if errors.As(err, &typeError) {
				return &healthStatus{}, nil
			}
			return nil, err
		}
		if !validStatus[hs.Status] {
			return &healthStatus{Status: "Unknown", Message: invalidHealthStatus}, nil
		}
		return hs, nil
	case lua.LTNil:
		return nil, nil
	}
	return nil, fmt.Errorf("expect table output from Lua script, not %s", returnValue.Type().String())
}

func usage(msg string) {
	fmt.Fprintf(os.Stderr, "argocd-lua: %s\nusage: argocd-lua [--open-libs] SCRIPT.lua OBJECT.json  (OBJECT - reads standard input)\n", msg)
	os.Exit(2)
}

func main() {
	args := os.Args[1:]
	openLibs := false
	if len(args) > 0 && args[0] == "--open-libs" {
		openLibs = true
		args = args[1:]
	}
	if len(args) != 2 {
		usage("expected a script and an object")
	}
	script, err := os.ReadFile(args[0])
	if err != nil {
		usage(err.Error())
	}
	var raw []byte
	if args[1] == "-" {
		raw, err = io.ReadAll(os.Stdin)
	} else {
		raw, err = os.ReadFile(args[1])
	}
	if err != nil {
		usage(err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var object map[string]any
	if err := dec.Decode(&object); err != nil {
		usage(fmt.Sprintf("%s is not a JSON object: %v", args[1], err))
	}
	toUnstructured(object)
	hs, err := run(string(script), object, openLibs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lua error: %v\n", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(hs)
	fmt.Println(string(out))
}
