// Package helm_test renders the reqlog chart as `helm template` does, for each
// store, and checks what the manifests promise: the workload kind and its
// replicas, the embedded store's volume and its refusal of replicas, the probes,
// the pod's security, secrets kept out of the pod spec, and the ServiceMonitor.
package helm_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const chartPath = "reqlog"

// Values that make each store render, with secrets whose text must never show
// outside the Secret.
const (
	apiKeys    = "acme:live:rk_live_4f9a0c0b2d7e46e1a7b3c8d9e0f1a2b3"
	mongodbURI = "mongodb://reqlog:hunter2-mongo@mongodb:27017/?authSource=admin"
	esPassword = "hunter2-elastic"
)

func storeValues(store string, replicas int) map[string]any {
	v := map[string]any{"store": store, "replicas": replicas, "secret": map[string]any{}}
	secret := v["secret"].(map[string]any)
	switch store {
	case "mongodb":
		secret["apiKeys"], secret["mongodbURI"] = apiKeys, mongodbURI
	case "elasticsearch":
		secret["apiKeys"], secret["elasticsearchPassword"] = apiKeys, esPassword
		v["elasticsearch"] = map[string]any{"url": "http://es-0:9200,http://es-1:9200", "username": "reqlog"}
	}
	return v
}

var stores = []string{"sqlite", "memory", "mongodb", "elasticsearch"}

// manifests is a rendered release: each object's YAML by kind and name.
type manifests map[string]string

func (m manifests) kinds() []string {
	var kinds []string
	for key := range m {
		kinds = append(kinds, strings.SplitN(key, "/", 2)[0])
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// decode unmarshals the single object of kind into out, failing if there is
// not exactly one.
func (m manifests) decode(t *testing.T, kind string, out any) {
	t.Helper()
	var found []string
	for key, doc := range m {
		if strings.HasPrefix(key, kind+"/") {
			found = append(found, doc)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s, want 1 (kinds: %v)", len(found), kind, m.kinds())
	}
	if err := yaml.UnmarshalStrict([]byte(found[0]), out); err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
}

// render is `helm template t reqlog --namespace logs` with values.
func render(t *testing.T, values map[string]any) (manifests, error) {
	t.Helper()
	chart, err := loader.Load(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{Log: t.Logf})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = "t", "logs"
	release, err := install.Run(chart, values)
	if err != nil {
		return nil, err
	}
	out := manifests{}
	for _, doc := range releaseutil.SplitManifests(release.Manifest) {
		var head struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		out[head.Kind+"/"+head.Metadata.Name] = doc
	}
	return out, nil
}

func mustRender(t *testing.T, values map[string]any) manifests {
	t.Helper()
	m, err := render(t, values)
	if err != nil {
		t.Fatalf("render %v: %v", values, err)
	}
	return m
}

// pod is the pod template of the release's workload, whichever kind it is.
func pod(t *testing.T, m manifests) corev1.PodTemplateSpec {
	t.Helper()
	if slices.Contains(m.kinds(), "StatefulSet") {
		var s appsv1.StatefulSet
		m.decode(t, "StatefulSet", &s)
		return s.Spec.Template
	}
	var d appsv1.Deployment
	m.decode(t, "Deployment", &d)
	return d.Spec.Template
}

func envOf(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

func mountAt(c corev1.Container, path string) (corev1.VolumeMount, bool) {
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == path })
	if i < 0 {
		return corev1.VolumeMount{}, false
	}
	return c.VolumeMounts[i], true
}

func volumeNamed(p corev1.PodSpec, name string) (corev1.Volume, bool) {
	i := slices.IndexFunc(p.Volumes, func(v corev1.Volume) bool { return v.Name == name })
	if i < 0 {
		return corev1.Volume{}, false
	}
	return p.Volumes[i], true
}

// helm lint --strict, for each store: no warnings, no errors.
func TestLint(t *testing.T) {
	for _, store := range stores {
		lint := action.NewLint()
		lint.Strict = true
		lint.Namespace = "logs"
		result := lint.Run([]string{chartPath}, storeValues(store, 1))
		for _, msg := range result.Messages {
			if msg.Severity >= support.WarningSev {
				t.Errorf("%s: %s", store, msg)
			}
		}
		for _, err := range result.Errors {
			t.Errorf("%s: %v", store, err)
		}
	}
}

// The embedded store is a StatefulSet of one pod whose data directory is a
// volume of its own: a persistent claim for sqlite.
func TestEmbeddedStoreIsOnePodWithAVolume(t *testing.T) {
	m := mustRender(t, storeValues("sqlite", 1))
	if kinds := m.kinds(); slices.Contains(kinds, "Deployment") {
		t.Errorf("kinds %v: a Deployment beside the StatefulSet", kinds)
	}
	var set appsv1.StatefulSet
	m.decode(t, "StatefulSet", &set)
	if set.Spec.Replicas == nil || *set.Spec.Replicas != 1 {
		t.Errorf("replicas %v, want 1", set.Spec.Replicas)
	}
	if len(set.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("volume claim templates %+v, want one", set.Spec.VolumeClaimTemplates)
	}
	claim := set.Spec.VolumeClaimTemplates[0]
	if size := claim.Spec.Resources.Requests[corev1.ResourceStorage]; claim.Name != "data" || size.String() != "10Gi" ||
		!slices.Equal(claim.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
		t.Errorf("claim %s of %s, %v; want data of 10Gi, ReadWriteOnce", claim.Name, size.String(), claim.Spec.AccessModes)
	}
	c := set.Spec.Template.Spec.Containers[0]
	if mount, ok := mountAt(c, "/var/lib/reqlog"); !ok || mount.Name != "data" || mount.ReadOnly {
		t.Errorf("/var/lib/reqlog mount %+v, want the claim data, writable", mount)
	}
	if _, ok := volumeNamed(set.Spec.Template.Spec, "data"); ok {
		t.Error("the pod declares a volume data that would shadow the claim")
	}
	if env := envOf(c); env["REQLOG_STORE"] != "sqlite" || env["REQLOG_SQLITE_DIR"] != "/var/lib/reqlog" {
		t.Errorf("env %v: want REQLOG_STORE=sqlite, REQLOG_SQLITE_DIR=/var/lib/reqlog", env)
	}
	var headless corev1.Service
	if err := yaml.Unmarshal([]byte(m["Service/"+set.Spec.ServiceName]), &headless); err != nil || headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("serviceName %q is not a headless Service of the release: %+v, %v", set.Spec.ServiceName, headless.Spec, err)
	}

	// The memory store: one pod too, its "data" an emptyDir.
	m = mustRender(t, storeValues("memory", 1))
	set = appsv1.StatefulSet{}
	m.decode(t, "StatefulSet", &set)
	if v, ok := volumeNamed(set.Spec.Template.Spec, "data"); !ok || v.EmptyDir == nil || len(set.Spec.VolumeClaimTemplates) != 0 {
		t.Errorf("memory store: data volume %+v, claims %d; want an emptyDir and no claim", v, len(set.Spec.VolumeClaimTemplates))
	}
}

func TestEmbeddedStoreRefusesReplicas(t *testing.T) {
	for _, store := range []string{"sqlite", "memory"} {
		for _, n := range []int{2, 5} {
			_, err := render(t, storeValues(store, n))
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("replicas %d", n)) || !strings.Contains(err.Error(), "exactly one replica") {
				t.Errorf("%s with %d replicas: %v, want a refusal naming the replicas", store, n, err)
			}
		}
		for _, n := range []int{0, 1} {
			if _, err := render(t, storeValues(store, n)); err != nil {
				t.Errorf("%s with %d replicas: %v", store, n, err)
			}
		}
	}
}

// A shared store runs N pods of one Deployment, all reading one Secret, so they
// share the portal secret and the keys.
func TestSharedStoreIsADeploymentSharingItsSecret(t *testing.T) {
	for _, store := range []string{"mongodb", "elasticsearch"} {
		t.Run(store, func(t *testing.T) {
			m := mustRender(t, storeValues(store, 3))
			if kinds := m.kinds(); slices.Contains(kinds, "StatefulSet") || slices.Contains(kinds, "PersistentVolumeClaim") {
				t.Errorf("kinds %v: a StatefulSet or claim for a shared store", kinds)
			}
			var d appsv1.Deployment
			m.decode(t, "Deployment", &d)
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
				t.Errorf("replicas %v, want 3", d.Spec.Replicas)
			}
			var secret corev1.Secret
			m.decode(t, "Secret", &secret)
			if n := len(secret.Data["portal-secret"]); n < 32 {
				t.Errorf("portal secret of %d bytes, want a generated one of at least 32", n)
			}
			spec := d.Spec.Template.Spec
			v, ok := volumeNamed(spec, "secrets")
			if !ok || v.Secret == nil || v.Secret.SecretName != secret.Name {
				t.Fatalf("secrets volume %+v, want the release's Secret %s", v, secret.Name)
			}
			c := spec.Containers[0]
			mount, ok := mountAt(c, "/run/secrets/reqlog")
			if !ok || mount.Name != "secrets" || !mount.ReadOnly {
				t.Errorf("secret mount %+v", mount)
			}
			env := envOf(c)
			want := map[string]string{
				"REQLOG_STORE":              store,
				"REQLOG_API_KEYS_FILE":      "/run/secrets/reqlog/api-keys",
				"REQLOG_PORTAL_SECRET_FILE": "/run/secrets/reqlog/portal-secret",
			}
			if store == "mongodb" {
				want["REQLOG_MONGODB_URI_FILE"] = "/run/secrets/reqlog/mongodb-uri"
			} else {
				want["REQLOG_ELASTICSEARCH_URL"] = "http://es-0:9200,http://es-1:9200"
				want["REQLOG_ELASTICSEARCH_USERNAME"] = "reqlog"
				want["REQLOG_ELASTICSEARCH_PASSWORD_FILE"] = "/run/secrets/reqlog/elasticsearch-password"
			}
			for name, value := range want {
				if env[name] != value {
					t.Errorf("%s=%q, want %q", name, env[name], value)
				}
				if file, ok := strings.CutPrefix(value, "/run/secrets/reqlog/"); ok && len(secret.Data[file]) == 0 {
					t.Errorf("%s names %s, which the Secret does not hold", name, file)
				}
			}
		})
	}
	// A given portal secret is used as it is.
	values := storeValues("mongodb", 2)
	values["secret"].(map[string]any)["portalSecret"] = strings.Repeat("p", 40)
	var secret corev1.Secret
	mustRender(t, values).decode(t, "Secret", &secret)
	if got := string(secret.Data["portal-secret"]); got != strings.Repeat("p", 40) {
		t.Errorf("portal secret %q, want the value given", got)
	}
}

func TestProbesAndPort(t *testing.T) {
	for _, store := range stores {
		c := pod(t, mustRender(t, storeValues(store, 1))).Spec.Containers[0]
		if i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "http" }); i < 0 || c.Ports[i].ContainerPort != 8080 {
			t.Errorf("%s: ports %+v, want http on 8080", store, c.Ports)
		}
		if addr := envOf(c)["REQLOG_ADDR"]; addr != ":8080" {
			t.Errorf("%s: REQLOG_ADDR %q, want :8080 (the http port)", store, addr)
		}
		for name, tc := range map[string]struct {
			probe *corev1.Probe
			path  string
		}{
			"startup":   {c.StartupProbe, "/healthz"},
			"liveness":  {c.LivenessProbe, "/healthz"},
			"readiness": {c.ReadinessProbe, "/readyz"},
		} {
			if tc.probe == nil || tc.probe.HTTPGet == nil {
				t.Errorf("%s: no HTTP %s probe", store, name)
				continue
			}
			if got := tc.probe.HTTPGet; got.Path != tc.path || got.Port.String() != "http" {
				t.Errorf("%s: %s probe %s on port %s, want %s on http", store, name, got.Path, got.Port.String(), tc.path)
			}
		}
		// The start-up allowance covers reqlogd's 30 s wait for its store.
		if s := c.StartupProbe; s.PeriodSeconds*s.FailureThreshold < 30 {
			t.Errorf("%s: start-up probe gives up after %d s", store, s.PeriodSeconds*s.FailureThreshold)
		}
	}
}

func TestPodRunsUnprivilegedWithResources(t *testing.T) {
	for _, store := range stores {
		spec := pod(t, mustRender(t, storeValues(store, 1))).Spec
		c := spec.Containers[0]
		ps, cs := spec.SecurityContext, c.SecurityContext
		switch {
		case ps == nil || cs == nil:
			t.Fatalf("%s: no security context", store)
		case ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser != 65532:
			t.Errorf("%s: pod runs as %v (non-root %v), want 65532, non-root", store, ps.RunAsUser, ps.RunAsNonRoot)
		case cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation:
			t.Errorf("%s: privilege escalation allowed", store)
		case cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem:
			t.Errorf("%s: root filesystem writable", store)
		case cs.Capabilities == nil || !slices.Equal(cs.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(cs.Capabilities.Add) > 0:
			t.Errorf("%s: capabilities %+v, want all dropped", store, cs.Capabilities)
		case spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken:
			t.Errorf("%s: a service account token is mounted", store)
		}
		if v, ok := volumeNamed(spec, "tmp"); !ok || v.EmptyDir == nil {
			t.Errorf("%s: no writable /tmp under the read-only root", store)
		}
		if _, ok := mountAt(c, "/tmp"); !ok {
			t.Errorf("%s: /tmp not mounted", store)
		}
		r := c.Resources
		if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() {
			t.Errorf("%s: resources %+v, want CPU and memory requests and a memory limit", store, r)
		}
	}
}

// Secret values appear in the Secret and nowhere else: the pod reads files.
func TestSecretsStayInTheSecret(t *testing.T) {
	for _, store := range stores {
		values := storeValues(store, 1)
		values["secret"].(map[string]any)["apiKeys"] = apiKeys
		m := mustRender(t, values)
		for key, doc := range m {
			if strings.HasPrefix(key, "Secret/") {
				continue
			}
			for _, secret := range []string{"rk_live_4f9a0c0b2d7e46e1a7b3c8d9e0f1a2b3", "hunter2"} {
				if strings.Contains(doc, secret) {
					t.Errorf("%s: %s holds a secret value", store, key)
				}
			}
		}
	}
	// With a Secret of one's own, the chart makes none and mounts that one.
	values := storeValues("sqlite", 1)
	values["secret"] = map[string]any{"existingSecret": "my-reqlog", "existingSecretKeys": []any{"api-keys", "portal-secret"}}
	m := mustRender(t, values)
	if slices.Contains(m.kinds(), "Secret") {
		t.Error("a Secret rendered beside secret.existingSecret")
	}
	spec := pod(t, m).Spec
	if v, _ := volumeNamed(spec, "secrets"); v.Secret == nil || v.Secret.SecretName != "my-reqlog" {
		t.Errorf("secrets volume %+v, want my-reqlog", v)
	}
	if env := envOf(spec.Containers[0]); env["REQLOG_API_KEYS_FILE"] != "/run/secrets/reqlog/api-keys" {
		t.Errorf("env %v: REQLOG_API_KEYS_FILE missing", env)
	}
}

func TestServiceAndServiceMonitor(t *testing.T) {
	m := mustRender(t, storeValues("sqlite", 1))
	if slices.Contains(m.kinds(), "ServiceMonitor") {
		t.Error("a ServiceMonitor without serviceMonitor.enabled")
	}
	values := storeValues("elasticsearch", 2)
	values["serviceMonitor"] = map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}
	m = mustRender(t, values)
	var svc corev1.Service
	if err := yaml.Unmarshal([]byte(m["Service/t-reqlog"]), &svc); err != nil {
		t.Fatal(err)
	}
	podLabels := pod(t, m).Labels
	if !subset(svc.Spec.Selector, podLabels) || len(svc.Spec.Selector) == 0 {
		t.Errorf("Service selector %v does not select the pods %v", svc.Spec.Selector, podLabels)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" || svc.Spec.Ports[0].Name != "http" {
		t.Errorf("Service ports %+v, want http to the pod's http", svc.Spec.Ports)
	}
	var monitor struct {
		Metadata struct{ Labels map[string]string }
		Spec     struct {
			Selector  struct{ MatchLabels map[string]string }
			Endpoints []struct{ Port, Path string }
		}
	}
	for key, doc := range m {
		if strings.HasPrefix(key, "ServiceMonitor/") {
			if err := yaml.Unmarshal([]byte(doc), &monitor); err != nil {
				t.Fatal(err)
			}
		}
	}
	if monitor.Metadata.Labels["release"] != "prom" {
		t.Errorf("ServiceMonitor labels %v lack serviceMonitor.labels", monitor.Metadata.Labels)
	}
	if sel := monitor.Spec.Selector.MatchLabels; len(sel) == 0 || !subset(sel, svc.Labels) {
		t.Errorf("ServiceMonitor selector %v does not select the Service %v", sel, svc.Labels)
	}
	if e := monitor.Spec.Endpoints; len(e) != 1 || e[0].Port != "http" || e[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want /metrics on http", e)
	}
}

func subset(small, big map[string]string) bool {
	for k, v := range small {
		if big[k] != v {
			return false
		}
	}
	return true
}

// Values that cannot work fail the render, before anything reaches a cluster.
func TestRefusals(t *testing.T) {
	with := func(store string, replicas int, set func(v map[string]any)) map[string]any {
		v := storeValues(store, replicas)
		set(v)
		return v
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"unknown store", with("sqlite", 1, func(v map[string]any) { v["store"] = "postgres" }), `store "postgres"`},
		{"shared store without keys", with("mongodb", 2, func(v map[string]any) { delete(v["secret"].(map[string]any), "apiKeys") }), "secret.apiKeys"},
		{"mongodb without uri", with("mongodb", 2, func(v map[string]any) { delete(v["secret"].(map[string]any), "mongodbURI") }), "secret.mongodbURI"},
		{"elasticsearch without url", with("elasticsearch", 2, func(v map[string]any) { delete(v, "elasticsearch") }), "elasticsearch.url"},
		{"short portal secret", with("sqlite", 1, func(v map[string]any) { v["secret"].(map[string]any)["portalSecret"] = "short" }), "secret.portalSecret"},
		{"setting that is not reqlogd's", with("sqlite", 1, func(v map[string]any) { v["env"] = map[string]any{"RETENTION": "30d"} }), "env.RETENTION"},
		{"unknown key of an existing Secret", with("sqlite", 1, func(v map[string]any) {
			v["secret"] = map[string]any{"existingSecret": "s", "existingSecretKeys": []any{"api-key"}}
		}), `unknown key "api-key"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// Settings from env reach the container as given, after the chart's own.
func TestExtraSettings(t *testing.T) {
	values := storeValues("sqlite", 1)
	values["env"] = map[string]any{"REQLOG_RETENTION": "30d", "REQLOG_RATE_LIMIT": 50}
	values["publicURL"] = "https://logs.example.com"
	env := envOf(pod(t, mustRender(t, values)).Spec.Containers[0])
	want := map[string]string{"REQLOG_RETENTION": "30d", "REQLOG_RATE_LIMIT": "50", "REQLOG_PUBLIC_URL": "https://logs.example.com"}
	got := maps.Clone(want)
	for k := range got {
		got[k] = env[k]
	}
	if !maps.Equal(got, want) {
		t.Errorf("env %v, want %v", got, want)
	}
	if _, err := chartutil.ReadValuesFile(chartPath + "/values.yaml"); err != nil {
		t.Errorf("values.yaml: %v", err)
	}
}
