package charttest

// Running helm, and turning what it renders into typed Kubernetes objects.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/build"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	chartDir  = "../waitroom"
	release   = "wr"
	namespace = "shop"
)

// helmPath is the helm binary: the one on PATH, else the one in
// $(go env GOPATH)/bin (scripts/install-tools.sh test builds it there);
// only one that answers `helm version` like Helm does counts.
var helmPath = sync.OnceValues(func() (string, error) {
	var candidates []string
	if p, err := exec.LookPath("helm"); err == nil {
		candidates = append(candidates, p)
	}
	gopath := build.Default.GOPATH
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		if first, _, _ := strings.Cut(strings.TrimSpace(string(out)), string(os.PathListSeparator)); first != "" {
			gopath = first
		}
	}
	candidates = append(candidates, filepath.Join(gopath, "bin", "helm"))
	for _, p := range candidates {
		out, err := exec.Command(p, "version", "--template", "{{.Version}}").Output()
		if err == nil && strings.HasPrefix(string(out), "v") {
			return p, nil
		}
	}
	return "", fmt.Errorf("no helm on PATH nor at %s: run scripts/install-tools.sh test", candidates[len(candidates)-1])
})

// helm runs helm with args and returns its standard output, and its
// standard error as the error's text when it fails. helm's own state
// (cache, config, plugins) lives in a temporary directory and no kubeconfig
// is read: nothing here touches the network or a cluster.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := helmPath()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// template renders the chart with the value files given (testdata names
// or paths) and extra helm arguments.
func template(t *testing.T, valueFiles []string, extra ...string) (string, error) {
	t.Helper()
	args := []string{"template", release, chartDir, "--namespace", namespace}
	for _, f := range valueFiles {
		args = append(args, "--values", f)
	}
	return helm(t, append(args, extra...)...)
}

// mustTemplate is template that fails the test when helm does.
func mustTemplate(t *testing.T, valueFiles ...string) string {
	t.Helper()
	out, err := template(t, valueFiles)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// objects holds what one value set renders, by kind.
type objects struct {
	Deployments     []*appsv1.Deployment
	Services        []*corev1.Service
	ConfigMaps      []*corev1.ConfigMap
	ServiceAccounts []*corev1.ServiceAccount
	PDBs            []*policyv1.PodDisruptionBudget
	HPAs            []*autoscalingv2.HorizontalPodAutoscaler
	Ingresses       []*networkingv1.Ingress
	ServiceMonitors []*serviceMonitor
	all             []metav1.Object
}

// serviceMonitor is the part of monitoring.coreos.com/v1 ServiceMonitor
// the chart renders (k8s.io/api has no type for it). Fields the chart
// does not use are unknown here on purpose: rendering one fails the test
// until it is added, after checking it against the operator's CRD.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path,omitempty"`
			Scheme        string `json:"scheme,omitempty"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// decodeAll splits helm's output into documents and decodes each one
// strictly into the type of its apiVersion and kind: an unknown or
// duplicate field, a field in the wrong case, or a kind this test does not
// know fails the test.
func decodeAll(t *testing.T, rendered string) *objects {
	t.Helper()
	var o objects
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(rendered)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		if isEmptyDoc(doc) {
			continue
		}
		if err := o.add(doc); err != nil {
			t.Errorf("document %d: %v\n%s", i, err, doc)
		}
	}
	for _, obj := range o.all {
		checkMeta(t, obj)
	}
	return &o
}

// isEmptyDoc reports a document of comments and blank lines only.
func isEmptyDoc(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		if l := strings.TrimSpace(line); l != "" && l != "---" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

func (o *objects) add(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	var obj metav1.Object
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		v := &appsv1.Deployment{}
		o.Deployments, obj = append(o.Deployments, v), v
	case "v1 Service":
		v := &corev1.Service{}
		o.Services, obj = append(o.Services, v), v
	case "v1 ConfigMap":
		v := &corev1.ConfigMap{}
		o.ConfigMaps, obj = append(o.ConfigMaps, v), v
	case "v1 ServiceAccount":
		v := &corev1.ServiceAccount{}
		o.ServiceAccounts, obj = append(o.ServiceAccounts, v), v
	case "policy/v1 PodDisruptionBudget":
		v := &policyv1.PodDisruptionBudget{}
		o.PDBs, obj = append(o.PDBs, v), v
	case "autoscaling/v2 HorizontalPodAutoscaler":
		v := &autoscalingv2.HorizontalPodAutoscaler{}
		o.HPAs, obj = append(o.HPAs, v), v
	case "networking.k8s.io/v1 Ingress":
		v := &networkingv1.Ingress{}
		o.Ingresses, obj = append(o.Ingresses, v), v
	case "monitoring.coreos.com/v1 ServiceMonitor":
		v := &serviceMonitor{}
		o.ServiceMonitors, obj = append(o.ServiceMonitors, v), v
	default:
		return fmt.Errorf("apiVersion %q kind %q: not a kind this test decodes; add its type to objects.add", tm.APIVersion, tm.Kind)
	}
	if err := decodeStrict(doc, obj); err != nil {
		return fmt.Errorf("%s %s: %w", tm.Kind, tm.APIVersion, err)
	}
	o.all = append(o.all, obj)
	return nil
}

// decodeStrict decodes a YAML document into v as the API server's strict
// field validation does: YAML to JSON refusing duplicate keys, then
// case-sensitive JSON decoding refusing unknown and duplicate fields.
func decodeStrict(doc []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(js, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// checkMeta checks what the API server would refuse in any object's
// metadata: its name, namespace, labels and annotation keys.
func checkMeta(t *testing.T, obj metav1.Object) {
	t.Helper()
	name := obj.GetName()
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		t.Errorf("name %q: %s", name, msg)
	}
	if obj.GetNamespace() != namespace {
		t.Errorf("%s: namespace %q, want the release's %q", name, obj.GetNamespace(), namespace)
	}
	for k, v := range obj.GetLabels() {
		for _, msg := range validation.IsQualifiedName(k) {
			t.Errorf("%s: label key %q: %s", name, k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			t.Errorf("%s: label %s=%q: %s", name, k, v, msg)
		}
	}
	for k := range obj.GetAnnotations() {
		for _, msg := range validation.IsQualifiedName(k) {
			t.Errorf("%s: annotation key %q: %s", name, k, msg)
		}
	}
	for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by", "helm.sh/chart"} {
		if obj.GetLabels()[k] == "" {
			t.Errorf("%s: no label %s", name, k)
		}
	}
}
