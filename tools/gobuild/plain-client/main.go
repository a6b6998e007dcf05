// plain-client is the Go plain client of bench/operator.py (the `plain-go` system): the least a
// controller of GenericJobs can do, with client-go. It watches the GenericJobs of one namespace
// and, for each new job, creates the pods and services that bench/operator.py rendered for a
// template job of the same shape, with the job's name and uid put in place of the template's
// sentinels. So it sends byte for byte what the Python plain client sends
// (t9k_sdk.reconcile.desired_children), in the same order (the pods, then the services), with
// the same number of requests in flight; it writes no status, no Events, and reads nothing but
// its one watch.
//
//	plain-client --kubeconfig FILE --namespace NS --children FILE --qps 20 --burst 30 --ready-port PORT
//
// --children is a JSON object {"name": SENTINEL, "uid": SENTINEL, "children": [{"path": ...,
// "body": {...}}, ...]}. --qps 0 means no client-side rate limit; otherwise every request (the
// watch included) takes a token from client-go's token bucket, as in any client-go controller.
// GET http://127.0.0.1:PORT/ answers 200 once the watch is open. An AlreadyExists (409) answer to
// a create is not an error.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
)

type template struct {
	Name     string `json:"name"`
	UID      string `json:"uid"`
	Children []struct {
		Path string          `json:"path"`
		Body json.RawMessage `json:"body"`
	} `json:"children"`
}

type create struct {
	path string
	body []byte
}

type job struct{ name, uid string }

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (required)")
	namespace := flag.String("namespace", "", "the namespace of the GenericJobs (required)")
	childrenFile := flag.String("children", "", "the template's children, as bench/operator.py writes them (required)")
	qps := flag.Float64("qps", 20, "client-side requests per second; 0: no client-side limit")
	burst := flag.Int("burst", 30, "client-side burst")
	inflight := flag.Int("inflight", 16, "creates in flight")
	readyPort := flag.Int("ready-port", 0, "port of the readiness URL on 127.0.0.1 (required)")
	flag.Parse()
	if *kubeconfig == "" || *namespace == "" || *childrenFile == "" || *readyPort == 0 {
		fail(errors.New("--kubeconfig, --namespace, --children and --ready-port are required"))
	}
	if *qps < 0 || *burst < 1 || *inflight < 1 {
		fail(fmt.Errorf("--qps must be >= 0 (got %g), --burst and --inflight >= 1 (got %d, %d)", *qps, *burst, *inflight))
	}
	tpl, err := readTemplate(*childrenFile)
	if err != nil {
		fail(err)
	}
	client, err := restClient(*kubeconfig, *qps, *burst)
	if err != nil {
		fail(err)
	}

	var ready atomic.Bool
	listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*readyPort)))
	if err != nil {
		fail(err)
	}
	go func() {
		fail(http.Serve(listener, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if !ready.Load() {
				http.Error(w, "the watch is not open yet", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok\n"))
		})))
	}()

	ctx := context.Background()
	creates := make(chan create, 4096)
	for range *inflight {
		go func() {
			for c := range creates {
				post(ctx, client, c)
			}
		}()
	}
	jobs := make(chan job, 1<<16)
	go func() { // in the order the jobs came: all of a job's children, pods first
		for j := range jobs {
			for _, c := range tpl.fill(j) {
				creates <- c
			}
		}
	}()
	path := fmt.Sprintf("/apis/batch.tensorstack.dev/v1beta1/namespaces/%s/genericjobs", *namespace)
	watch(ctx, client, path, jobs, &ready)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "plain-client: %v\n", err)
	os.Exit(1)
}

func readTemplate(file string) (*template, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var tpl template
	if err := json.Unmarshal(data, &tpl); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if tpl.Name == "" || tpl.UID == "" || len(tpl.Children) == 0 {
		return nil, fmt.Errorf("%s: needs a name, a uid and at least one child", file)
	}
	for i, c := range tpl.Children {
		for _, s := range []string{tpl.Name, tpl.UID} {
			if !bytes.Contains(c.Body, []byte(s)) {
				return nil, fmt.Errorf("%s: child %d (%s) does not contain the sentinel %q", file, i, c.Path, s)
			}
		}
	}
	return &tpl, nil
}

// fill returns the template's creates with the job's name and uid in place of the sentinels.
func (t *template) fill(j job) []create {
	name, uid := jsonString(j.name), jsonString(j.uid)
	out := make([]create, len(t.Children))
	for i, c := range t.Children {
		body := bytes.ReplaceAll(c.Body, []byte(t.Name), name)
		out[i] = create{path: c.Path, body: bytes.ReplaceAll(body, []byte(t.UID), uid)}
	}
	return out
}

// jsonString is s as it goes between the quotes of a JSON string.
func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b[1 : len(b)-1]
}

func restClient(kubeconfig string, qps float64, burst int) (*rest.RESTClient, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	if qps == 0 {
		config.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	} else {
		config.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(float32(qps), burst)
	}
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"}) // Status, for errors
	config.GroupVersion = &schema.GroupVersion{Version: "v1"}
	config.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	config.ContentType = "application/json"
	config.AcceptContentTypes = "application/json"
	config.UserAgent = "t9k-bench-plain-go"
	return rest.RESTClientFor(config)
}

func post(ctx context.Context, client *rest.RESTClient, c create) {
	result := client.Post().AbsPath(c.path).Body(c.body).Do(ctx)
	var code int
	result.StatusCode(&code)
	if err := result.Error(); err != nil && code != http.StatusConflict {
		fmt.Fprintf(os.Stderr, "create %s failed: HTTP %d: %v\n", c.path, code, err)
	}
}

type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Name            string `json:"name"`
			UID             string `json:"uid"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	} `json:"object"`
}

// watch sends each GenericJob at path to jobs once (by uid): those that exist when it starts (a
// watch from resourceVersion 0 lists them as ADDED) and those added later. It watches again
// from where it was when the API server ends a watch, and from the start after an ERROR (such
// as 410 Gone); the uids seen keep a job from being sent twice.
func watch(ctx context.Context, client *rest.RESTClient, path string, jobs chan<- job, ready *atomic.Bool) {
	seen := map[string]bool{}
	rv := "0"
	for {
		stream, err := client.Get().AbsPath(path).
			Param("watch", "true").
			Param("resourceVersion", rv).
			Param("allowWatchBookmarks", "true").
			Stream(ctx)
		if err != nil {
			fmt.Fprintf(os.Stderr, "watch %s: %v\n", path, err)
			time.Sleep(time.Second)
			continue
		}
		ready.Store(true)
		decoder := json.NewDecoder(stream)
		for {
			var ev watchEvent
			if err := decoder.Decode(&ev); err != nil {
				break // the API server ended the watch
			}
			if ev.Type == "ERROR" {
				rv = "0"
				break
			}
			rv = ev.Object.Metadata.ResourceVersion
			uid := ev.Object.Metadata.UID
			if ev.Type == "ADDED" && !seen[uid] {
				seen[uid] = true
				jobs <- job{name: ev.Object.Metadata.Name, uid: uid}
			}
		}
		_ = stream.Close()
	}
}
