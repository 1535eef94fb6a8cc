package charttest

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The value sets every test renders (deploy/helm/charttest/testdata).
var valueSets = []struct {
	name string
	file string
	// what the set turns on, so each check knows what to expect
	hpa, pdb, spread, metrics, ingress, serviceMonitor, serviceAccount, signingKey bool
}{
	{name: "defaults", file: "testdata/defaults.yaml", pdb: true, spread: true, metrics: true},
	{name: "full", file: "testdata/full.yaml", hpa: true, pdb: true, spread: true, metrics: true, ingress: true, serviceMonitor: true, serviceAccount: true, signingKey: true},
	{name: "minimal", file: "testdata/minimal.yaml"},
}

// secretLike names the environment variables that must only ever come
// from a Secret: WAITROOM_*SECRET*, *TOKEN*, the Redis URL (its password).
var secretLike = regexp.MustCompile(`(?i)(SECRET|TOKEN|PASSWORD|PASSWD|REDIS_URL|PRIVATE_KEY)`)

func TestLint(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			t.Parallel()
			out, err := helm(t, "lint", "--strict", chartDir, "--namespace", namespace, "--values", vs.file)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			// Clean: informational notes only (helm asks for an icon).
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "[WARNING]") || strings.Contains(line, "[ERROR]") {
					t.Errorf("helm lint: %s", line)
				}
			}
			if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
				t.Errorf("helm lint did not pass:\n%s", out)
			}
		})
	}
}

// TestRenderDecodesStrictly renders every value set and decodes every
// object into its API type (decodeAll), then checks the contract.
func TestRenderDecodesStrictly(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			t.Parallel()
			o := decodeAll(t, mustTemplate(t, vs.file))
			want := map[string][2]int{ // kind: got, want
				"Deployment":              {len(o.Deployments), 1},
				"Service":                 {len(o.Services), 1},
				"ConfigMap":               {len(o.ConfigMaps), 1},
				"PodDisruptionBudget":     {len(o.PDBs), b2i(vs.pdb)},
				"HorizontalPodAutoscaler": {len(o.HPAs), b2i(vs.hpa)},
				"ServiceMonitor":          {len(o.ServiceMonitors), b2i(vs.serviceMonitor)},
				"ServiceAccount":          {len(o.ServiceAccounts), b2i(vs.serviceAccount)},
			}
			if vs.ingress {
				// waitroom's paths, the pass links, one per room (two in full.yaml)
				want["Ingress"] = [2]int{len(o.Ingresses), 4}
			} else {
				want["Ingress"] = [2]int{len(o.Ingresses), 0}
			}
			for kind, n := range want {
				if n[0] != n[1] {
					t.Errorf("%d %s, want %d", n[0], kind, n[1])
				}
			}
			if t.Failed() {
				return
			}
			d := o.Deployments[0]
			checkPod(t, d, vs.signingKey)
			checkSecretsByReference(t, o)
			checkSelectors(t, o)
			checkMetrics(t, o, vs.metrics)

			if vs.hpa {
				if d.Spec.Replicas != nil {
					t.Errorf("replicas %d with the HPA on: the HPA owns it", *d.Spec.Replicas)
				}
				h := o.HPAs[0]
				if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != d.Name {
					t.Errorf("HPA targets %+v, want Deployment %s", h.Spec.ScaleTargetRef, d.Name)
				}
				if len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Resource == nil || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU ||
					h.Spec.Metrics[0].Resource.Target.AverageUtilization == nil {
					t.Errorf("HPA metrics %+v, want one CPU utilization target", h.Spec.Metrics)
				}
				if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
					t.Errorf("HPA replicas min %v max %d", h.Spec.MinReplicas, h.Spec.MaxReplicas)
				}
			} else if d.Spec.Replicas == nil {
				t.Error("no replicas without the HPA")
			}

			if vs.pdb {
				p := o.PDBs[0]
				if (p.Spec.MinAvailable == nil) == (p.Spec.MaxUnavailable == nil) {
					t.Errorf("PDB: minAvailable %v, maxUnavailable %v: want exactly one", p.Spec.MinAvailable, p.Spec.MaxUnavailable)
				}
			}

			spread := d.Spec.Template.Spec.TopologySpreadConstraints
			if vs.spread {
				var keys []string
				for _, c := range spread {
					keys = append(keys, c.TopologyKey)
					if c.WhenUnsatisfiable != corev1.ScheduleAnyway {
						t.Errorf("spread over %s: %s, want ScheduleAnyway", c.TopologyKey, c.WhenUnsatisfiable)
					}
					if c.LabelSelector == nil || !mapsEqual(c.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
						t.Errorf("spread over %s: selector %v, want the pods' %v", c.TopologyKey, c.LabelSelector, d.Spec.Selector.MatchLabels)
					}
				}
				slices.Sort(keys)
				if !slices.Equal(keys, []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"}) {
					t.Errorf("spread over %v, want zone and hostname", keys)
				}
			} else if len(spread) != 0 {
				t.Errorf("%d spread constraints, want none", len(spread))
			}

			if vs.serviceAccount {
				sa := o.ServiceAccounts[0]
				if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
					t.Error("ServiceAccount mounts its token")
				}
				if d.Spec.Template.Spec.ServiceAccountName != sa.Name {
					t.Errorf("pods run as %q, want the chart's %q", d.Spec.Template.Spec.ServiceAccountName, sa.Name)
				}
			}

			if vs.serviceMonitor {
				sm := o.ServiceMonitors[0]
				if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
					t.Errorf("ServiceMonitor endpoints %+v, want port metrics, path /metrics", sm.Spec.Endpoints)
				}
				if !mapsEqual(sm.Spec.Selector.MatchLabels, o.Services[0].Spec.Selector) {
					t.Errorf("ServiceMonitor selects %v, the Service is labelled %v", sm.Spec.Selector.MatchLabels, o.Services[0].Labels)
				}
			}

			if vs.ingress {
				checkIngresses(t, o)
			}
		})
	}
}

// checkPod checks the pod template: who it runs as, what it may do, its
// probes, /tmp, and the signing key's mount.
func checkPod(t *testing.T, d *appsv1.Deployment, signingKey bool) {
	t.Helper()
	pod := d.Spec.Template.Spec
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("pod: runAsNonRoot is not true")
	}
	user := imageUser(t)
	if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != user || psc.RunAsGroup == nil || *psc.RunAsGroup != user || psc.FSGroup == nil {
		t.Errorf("pod: runAsUser/runAsGroup/fsGroup %+v, want the image's USER %d", psc, user)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod: seccompProfile is not RuntimeDefault")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("pod: the service account token is mounted")
	}
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds < 15 {
		t.Errorf("pod: terminationGracePeriodSeconds %v, want at least waitroom's 10 s drain plus the preStop pause", pod.TerminationGracePeriodSeconds)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("container: readOnlyRootFilesystem is not true")
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("container: allowPrivilegeEscalation is not false")
	}
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container: capabilities %+v, want drop ALL, add none", sc)
	}
	if !strings.HasPrefix(c.Image, "waitroom/waitroom:") {
		t.Errorf("image %q, want the public waitroom/waitroom", c.Image)
	}

	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe %+v, want GET %s on port http", name, p, path)
		}
	}
	probe("readiness", c.ReadinessProbe, "/readyz")
	probe("liveness", c.LivenessProbe, "/healthz")
	for _, route := range []string{"/readyz", "/healthz"} {
		if !repoFileHas(t, "internal/web/httpapi/routes.go", `r.Get("`+route+`"`) {
			t.Errorf("internal/web/httpapi/routes.go serves no GET %s any more", route)
		}
	}

	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] == 0 {
		t.Error("no container port named http")
	}
	env := envOf(c)
	if got, want := env["WAITROOM_ADDR"].Value, ":"+itoa(ports["http"]); got != want {
		t.Errorf("WAITROOM_ADDR %q, want %q (the http port)", got, want)
	}

	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	if m, ok := mounts["/tmp"]; !ok || volumes[m.Name].EmptyDir == nil {
		t.Error("/tmp is not an emptyDir (the root filesystem is read-only)")
	}
	keyFile := env["WAITROOM_SIGNING_KEY_FILE"]
	if !signingKey {
		if keyFile.Name != "" {
			t.Errorf("WAITROOM_SIGNING_KEY_FILE %q without signingKey.enabled", keyFile.Value)
		}
		return
	}
	dir := filepath.Dir(keyFile.Value)
	m, ok := mounts[dir]
	if !ok || !m.ReadOnly {
		t.Fatalf("WAITROOM_SIGNING_KEY_FILE %q: no read-only mount at %s", keyFile.Value, dir)
	}
	v := volumes[m.Name]
	if v.Secret == nil || len(v.Secret.Items) != 1 || v.Secret.Items[0].Path != filepath.Base(keyFile.Value) {
		t.Errorf("signing key volume %+v: want one item of a Secret at %s", v, filepath.Base(keyFile.Value))
	}
	if v.Secret != nil && v.Secret.DefaultMode != nil && *v.Secret.DefaultMode&0o007 != 0 {
		t.Errorf("signing key file mode %o: others may read it", *v.Secret.DefaultMode)
	}
}

// checkSecretsByReference: every secret-like variable comes from a
// Secret's key, none is a value, none is in the ConfigMap; the required
// ones are there, and each one exists in waitroom's configuration.
func checkSecretsByReference(t *testing.T, o *objects) {
	t.Helper()
	c := o.Deployments[0].Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if !secretLike.MatchString(e.Name) {
			continue
		}
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("%s is not a secretKeyRef (value %q)", e.Name, e.Value)
		}
		if strings.HasPrefix(e.Name, "WAITROOM_") && !repoFileHas(t, "internal/config/load.go", `"`+e.Name+`"`) &&
			!repoTreeHas(t, "internal/config", `"`+e.Name+`"`) {
			t.Errorf("%s: waitroom reads no such variable (internal/config)", e.Name)
		}
	}
	env := envOf(c)
	for _, name := range []string{"WAITROOM_SECRET", "WAITROOM_REDIS_URL"} {
		ref := env[name].ValueFrom
		if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "waitroom" {
			t.Errorf("%s: want a secretKeyRef into existingSecret (waitroom), got %+v", name, ref)
		} else if ref.SecretKeyRef.Optional != nil && *ref.SecretKeyRef.Optional {
			t.Errorf("%s is optional", name)
		}
	}
	for _, e := range c.EnvFrom {
		if e.SecretRef != nil {
			t.Errorf("envFrom a whole Secret %q: secrets are mapped key by key", e.SecretRef.Name)
		}
	}
	for _, cm := range o.ConfigMaps {
		for k := range cm.Data {
			if secretLike.MatchString(k) {
				t.Errorf("ConfigMap %s holds %s", cm.Name, k)
			}
		}
	}
}

// checkSelectors: the Service, the PDB and the Deployment pick the pods
// by the same labels, which the pods carry.
func checkSelectors(t *testing.T, o *objects) {
	t.Helper()
	d := o.Deployments[0]
	sel := d.Spec.Selector.MatchLabels
	for k, v := range sel {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("pods lack selector label %s=%s", k, v)
		}
	}
	if !mapsEqual(o.Services[0].Spec.Selector, sel) {
		t.Errorf("Service selects %v, Deployment %v", o.Services[0].Spec.Selector, sel)
	}
	for _, p := range o.PDBs {
		if p.Spec.Selector == nil || !mapsEqual(p.Spec.Selector.MatchLabels, sel) {
			t.Errorf("PDB selects %v, Deployment %v", p.Spec.Selector, sel)
		}
	}
	if cm := o.ConfigMaps[0].Name; len(d.Spec.Template.Spec.Containers[0].EnvFrom) != 1 || d.Spec.Template.Spec.Containers[0].EnvFrom[0].ConfigMapRef == nil ||
		d.Spec.Template.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name != cm {
		t.Errorf("the container does not take its settings from ConfigMap %s", cm)
	}
	if d.Spec.Template.Annotations["checksum/config"] == "" {
		t.Error("no checksum/config: a settings change would not roll the pods")
	}
}

// checkMetrics: on, a metrics port on the container and the Service and
// WAITROOM_METRICS_ADDR naming it (":9090" is waitroom's default); off,
// none of them and WAITROOM_METRICS_ADDR=off (unset would mean on).
func checkMetrics(t *testing.T, o *objects, on bool) {
	t.Helper()
	c := o.Deployments[0].Spec.Template.Spec.Containers[0]
	addr := envOf(c)["WAITROOM_METRICS_ADDR"]
	var cport int32
	for _, p := range c.Ports {
		if p.Name == "metrics" {
			cport = p.ContainerPort
		}
	}
	sport := false
	for _, p := range o.Services[0].Spec.Ports {
		if p.Name == "metrics" {
			sport = p.TargetPort.String() == "metrics"
		}
		if p.Name == "http" && (p.Port != 80 || p.TargetPort.String() != "http") {
			t.Errorf("Service port http %d -> %s, want 80 -> http", p.Port, p.TargetPort.String())
		}
	}
	if !on {
		if addr.Value != "off" || cport != 0 || sport {
			t.Errorf("metrics off: WAITROOM_METRICS_ADDR %q, container port %d, Service port %v; want off, none, none", addr.Value, cport, sport)
		}
		return
	}
	if addr.Value != ":"+itoa(cport) || cport == 0 || !sport {
		t.Errorf("metrics on: WAITROOM_METRICS_ADDR %q, container port %d, Service port %v", addr.Value, cport, sport)
	}
	if def := `DefaultMetricsAddr = "` + addr.Value + `"`; !repoFileHas(t, "internal/config/config.go", def) {
		t.Errorf("internal/config/config.go no longer says %s: check the chart's containerPorts.metrics", def)
	}
}

// ingress-nginx's own checks of the annotations (its
// internal/ingress/annotations/parser/validators.go and authreq): a value
// they refuse makes the controller drop the whole Ingress.
var (
	nginxVariable   = regexp.MustCompile(`^[A-Za-z0-9\-\_\$\{\}]*$`)
	urlWithVariable = regexp.MustCompile(`^[\-\.\_\~a-zA-Z0-9\/:, ` + regexp.QuoteMeta(`,:?&=`) + `$]*$`)
	headersVariable = regexp.MustCompile(`^[A-Za-z0-9-_, ]*$`)
	cacheDuration   = regexp.MustCompile(`^(\d{3} )+\d+(ms|s|m|h|d|w|M|y)$`)
)

// checkIngresses checks the forward-auth example against waitroom's
// routes and headers and against what ingress-nginx accepts.
func checkIngresses(t *testing.T, o *objects) {
	t.Helper()
	svc := o.Services[0].Name
	byName := map[string]*networkingv1.Ingress{}
	for _, ing := range o.Ingresses {
		byName[ing.Name] = ing
		if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "nginx" {
			t.Errorf("%s: ingressClassName %v, want nginx", ing.Name, ing.Spec.IngressClassName)
		}
	}

	// waitroom's own paths: each a regular expression ingress-nginx
	// anchors with ^, matching the prefix and what is under it only.
	own := byName[svc]
	if own == nil {
		t.Fatalf("no Ingress %s for waitroom's paths", svc)
	}
	matches := func(ing *networkingv1.Ingress, path string) bool {
		for _, p := range ing.Spec.Rules[0].HTTP.Paths {
			if regexp.MustCompile("(?i)^" + p.Path).MatchString(path) {
				return true
			}
		}
		return false
	}
	for _, p := range own.Spec.Rules[0].HTTP.Paths {
		if p.Backend.Service == nil || p.Backend.Service.Name != svc {
			t.Errorf("waitroom path %s goes to %+v, want Service %s", p.Path, p.Backend, svc)
		}
	}
	for _, path := range []string{"/q", "/q/default", "/api/v1/queues/default/enter", "/_waitroom/style.css", "/.well-known/jwks.json", "/admin", "/gate/verify"} {
		if !matches(own, path) {
			t.Errorf("%s does not reach waitroom", path)
		}
	}
	for _, path := range []string{"/", "/query", "/order", "/x.well-known", "/apis", "/_waitroom_handover/order"} {
		if matches(own, path) {
			t.Errorf("%s (the order site's) reaches waitroom's paths", path)
		}
	}

	// Pass links: /_waitroom_handover/<page> rewritten to /<page>.
	ho := byName[svc+"-handover"]
	if ho == nil {
		t.Fatalf("no Ingress %s-handover", svc)
	}
	hp := ho.Spec.Rules[0].HTTP.Paths[0]
	target := ho.Annotations["nginx.ingress.kubernetes.io/rewrite-target"]
	re := regexp.MustCompile("(?i)^" + hp.Path)
	for in, want := range map[string]string{"/_waitroom_handover/order": "/order", "/_waitroom_handover/sale/concert-a/": "/sale/concert-a/", "/_waitroom_handover": "/"} {
		if got := re.ReplaceAllString(in, strings.ReplaceAll(target, "$2", "${2}")); got != want {
			t.Errorf("pass link %s is rewritten to %s, want %s", in, got, want)
		}
	}
	if hp.Backend.Service == nil || hp.Backend.Service.Name != svc {
		t.Errorf("pass links go to %+v, want Service %s", hp.Backend, svc)
	}

	// The order site, one Ingress per room.
	sub, queue := gateHeader(t, "HeaderSub"), gateHeader(t, "HeaderQueue")
	rooms := 0
	for _, ing := range o.Ingresses {
		a := ing.Annotations
		if a["nginx.ingress.kubernetes.io/auth-url"] == "" {
			continue
		}
		rooms++
		authURL := a["nginx.ingress.kubernetes.io/auth-url"]
		if !strings.HasSuffix(authURL, "/gate/verify") {
			t.Errorf("%s: auth-url %q does not end with /gate/verify", ing.Name, authURL)
		}
		if want := "http://" + svc + "." + namespace + ".svc.cluster.local:80/gate/verify"; authURL != want {
			t.Errorf("%s: auth-url %q, want the Service's in-cluster %q", ing.Name, authURL, want)
		}
		if !repoFileHas(t, "internal/web/httpapi/routes.go", `Get("/gate/verify"`) {
			t.Error("internal/web/httpapi/routes.go serves no GET /gate/verify any more")
		}
		if a["nginx.ingress.kubernetes.io/auth-method"] != "GET" {
			t.Errorf("%s: no auth-method: ingress-nginx then sends no X-Original-URI", ing.Name)
		}
		hdrs := strings.Split(a["nginx.ingress.kubernetes.io/auth-response-headers"], ",")
		if !slices.Contains(hdrs, sub) || !slices.Contains(hdrs, queue) {
			t.Errorf("%s: auth-response-headers %v, want %s and %s (gate/forwardauth.go)", ing.Name, hdrs, sub, queue)
		}
		q := strings.TrimPrefix(ing.Name, svc+"-order-")
		signin := a["nginx.ingress.kubernetes.io/auth-signin"]
		if want := "/q/" + q + "?return=/_waitroom_handover$escaped_request_uri"; !strings.HasSuffix(signin, want) {
			t.Errorf("%s: auth-signin %q, want the room's waiting page ending %q", ing.Name, signin, want)
		}
		if a["nginx.ingress.kubernetes.io/auth-signin-redirect-param"] != "return" {
			t.Errorf("%s: without auth-signin-redirect-param return, ingress-nginx adds ?rd= to the waiting page", ing.Name)
		}
		key := a["nginx.ingress.kubernetes.io/auth-cache-key"]
		for _, part := range []string{"${remote_addr}", "${http_cookie}", "${host}", "${request_uri}", "${http_authorization}", "${http_x_waitroom_pass}"} {
			if !strings.Contains(key, part) {
				t.Errorf("%s: auth-cache-key %q lacks %s", ing.Name, key, part)
			}
		}
		if a["nginx.ingress.kubernetes.io/auth-cache-duration"] != "204 1s" {
			t.Errorf("%s: auth-cache-duration %q, want 204 1s (the nginx file's proxy_cache_valid 204 1s)", ing.Name, a["nginx.ingress.kubernetes.io/auth-cache-duration"])
		}
		for name, ok := range map[string]bool{
			"auth-cache-key":        nginxVariable.MatchString(key),
			"auth-url":              urlWithVariable.MatchString(authURL),
			"auth-signin":           urlWithVariable.MatchString(signin),
			"auth-response-headers": headersVariable.MatchString(a["nginx.ingress.kubernetes.io/auth-response-headers"]),
			"auth-cache-duration":   cacheDuration.MatchString(a["nginx.ingress.kubernetes.io/auth-cache-duration"]),
		} {
			if !ok {
				t.Errorf("%s: ingress-nginx refuses the %s annotation's value", ing.Name, name)
			}
		}
		for _, p := range ing.Spec.Rules[0].HTTP.Paths {
			if p.Backend.Service == nil || p.Backend.Service.Name == svc {
				t.Errorf("%s: path %s goes to %+v, want the order site", ing.Name, p.Path, p.Backend)
			}
		}
	}
	if rooms != 2 {
		t.Errorf("%d order-site Ingresses, want one per room (2)", rooms)
	}
	// The order site's concert room covers its root, as waitroom's route
	// /sale/concert-a/ does, and not a neighbour.
	if ing := byName[svc+"-order-concert-a"]; ing == nil {
		t.Errorf("no Ingress %s-order-concert-a", svc)
	} else {
		for path, want := range map[string]bool{"/sale/concert-a": true, "/sale/concert-a/seat": true, "/sale/concert-ab": false} {
			if got := matches(ing, path); got != want {
				t.Errorf("concert-a room covers %s: %v, want %v", path, got, want)
			}
		}
	}
}

// TestRenderFails: what the chart must refuse, and with which words.
func TestRenderFails(t *testing.T) {
	cases := []struct {
		name   string
		values string // YAML added to testdata/defaults.yaml; "-" renders without any values file
		want   string
	}{
		{"no existingSecret", "-", "existingSecret is required"},
		{"empty existingSecret", `existingSecret: ""`, "existingSecret is required"},
		{"secret in config", "config: {WAITROOM_SECRET: x}", "config.WAITROOM_SECRET looks like a secret"},
		{"token in config", "config: {WAITROOM_ADMIN_TOKEN: x}", "looks like a secret"},
		{"redis url in config", "config: {WAITROOM_REDIS_URL: redis://redis:6379/0}", "looks like a secret"},
		{"addr in config", "config: {WAITROOM_METRICS_ADDR: ':9100'}", "set by the chart"},
		{"secret value in extraEnv", "extraEnv: [{name: WAITROOM_WEBHOOK_SECRET, value: x}]", "extraEnv WAITROOM_WEBHOOK_SECRET looks like a secret"},
		{"serviceMonitor without metrics", "serviceMonitor: {enabled: true}\nmetrics: {enabled: false}", "serviceMonitor.enabled needs metrics.enabled"},
		{"ingress without trusted proxies", "ingress: {enabled: true}", "WAITROOM_TRUSTED_PROXIES"},
		{"pdb without a bound", "podDisruptionBudget: {maxUnavailable: ''}", "set minAvailable or maxUnavailable"},
		{"hpa without cpu request", "autoscaling: {enabled: true}\nresources: {requests: null}", "resources.requests.cpu"},
		{"room twice", "config: {WAITROOM_TRUSTED_PROXIES: 10.0.0.0/8}\ningress: {enabled: true, orderSite: {rooms: [{queue: a, paths: [{path: /}]}, {queue: a, paths: [{path: /b}]}]}}", "queue a is listed twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var files []string
			if tc.values != "-" {
				f := filepath.Join(t.TempDir(), "values.yaml")
				if err := os.WriteFile(f, []byte(tc.values+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				files = []string{"testdata/defaults.yaml", f}
			}
			out, err := template(t, files)
			if err == nil {
				t.Fatalf("helm template succeeded; want it to fail with %q. Rendered:\n%s", tc.want, out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// imageUser is the numeric USER of the Dockerfile's final stage.
func imageUser(t *testing.T) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^USER (\d+)(?::\d+)?\s*$`).FindAllStringSubmatch(readRepoFile(t, "Dockerfile"), -1)
	if len(m) == 0 {
		t.Fatal("Dockerfile: no numeric USER")
	}
	n, err := strconv.ParseInt(m[len(m)-1][1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// gateHeader is the value of a header constant of gate/forwardauth.go,
// read from the source (this module does not import the service's).
func gateHeader(t *testing.T, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*` + name + `\s*=\s*"([^"]+)"`).FindStringSubmatch(readRepoFile(t, "gate/forwardauth.go"))
	if m == nil {
		t.Fatalf("gate/forwardauth.go: no constant %s", name)
	}
	return m[1]
}

// readRepoFile reads a file of the waitroom repository, from its root.
func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func repoFileHas(t *testing.T, rel, s string) bool {
	t.Helper()
	return strings.Contains(readRepoFile(t, rel), s)
}

// repoTreeHas reports whether any non-test .go file under dir holds s.
func repoTreeHas(t *testing.T, dir, s string) bool {
	t.Helper()
	found := false
	root := filepath.Join("..", "..", "..", filepath.FromSlash(dir))
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		found = found || strings.Contains(string(b), s)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

func mapsEqual(a, b map[string]string) bool { return len(a) > 0 && maps.Equal(a, b) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
