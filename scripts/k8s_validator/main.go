// stackscope-k8s-validator: checks Kubernetes manifests (dist/kubernetes/*.yaml) offline, for
// stackscope's tests, built by scripts/k8s_validator.sh from the Kubernetes API's own Go
// modules (k8s.io/api, k8s.io/apimachinery at one release, sigs.k8s.io/yaml).
//
// Each YAML document is decoded strictly into the Go type of its apiVersion and kind: a field
// the type does not have (a misspelling), a value of the wrong type, a duplicate key, a
// quantity that does not parse, or a kind this tool does not know is an error. Then a few
// checks the API server would make on these objects: metadata.name set; every container
// with a name and an image; every volumeMount naming a volume of its pod; a workload's
// selector matching its template's labels; a DaemonSet's or Deployment's probes naming a
// port of their container (by number or name); a ConfigMap's "*.yaml" data parsing as YAML.
//
// Usage: stackscope-k8s-validator FILE...   prints "KIND/NAME ..." per file; exit 1 on an error.
package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// the kinds dist/kubernetes/ uses, by "apiVersion kind"
var kinds = map[string]func() any{
	"v1 ConfigMap":      func() any { return &corev1.ConfigMap{} },
	"v1 Namespace":      func() any { return &corev1.Namespace{} },
	"v1 Service":        func() any { return &corev1.Service{} },
	"v1 ServiceAccount": func() any { return &corev1.ServiceAccount{} },
	"apps/v1 DaemonSet": func() any { return &appsv1.DaemonSet{} },
	"apps/v1 Deployment": func() any {
		return &appsv1.Deployment{}
	},
	"rbac.authorization.k8s.io/v1 ClusterRole":        func() any { return &rbacv1.ClusterRole{} },
	"rbac.authorization.k8s.io/v1 ClusterRoleBinding": func() any { return &rbacv1.ClusterRoleBinding{} },
}

var docSplit = regexp.MustCompile(`(?m)^---[ \t]*$`)

func checkMeta(m *metav1.ObjectMeta) error {
	if m.Name == "" {
		return fmt.Errorf("metadata.name is empty")
	}
	return nil
}

func checkPod(spec *corev1.PodSpec) error {
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	if len(spec.Containers) == 0 {
		return fmt.Errorf("no containers")
	}
	for _, c := range all {
		if c.Name == "" || c.Image == "" {
			return fmt.Errorf("a container without a name or an image (%q)", c.Name)
		}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				return fmt.Errorf("container %s: volumeMount %q names no volume", c.Name, m.Name)
			}
		}
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p == nil || p.HTTPGet == nil {
				continue
			}
			if !hasPort(c, p.HTTPGet.Port) {
				return fmt.Errorf("container %s: a probe's port %s is not one of its ports", c.Name, p.HTTPGet.Port.String())
			}
		}
	}
	return nil
}

func hasPort(c corev1.Container, port intstr.IntOrString) bool {
	for _, p := range c.Ports {
		if (port.Type == intstr.Int && p.ContainerPort == port.IntVal) ||
			(port.Type == intstr.String && p.Name == port.StrVal) {
			return true
		}
	}
	return false
}

func checkSelector(sel *metav1.LabelSelector, tmpl map[string]string) error {
	if sel == nil {
		return fmt.Errorf("spec.selector is missing")
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return fmt.Errorf("spec.selector: %v", err)
	}
	if s.Empty() || !s.Matches(labels.Set(tmpl)) {
		return fmt.Errorf("spec.selector does not match the template's labels")
	}
	return nil
}

func check(obj any) (string, error) {
	switch o := obj.(type) {
	case *appsv1.DaemonSet:
		if err := checkSelector(o.Spec.Selector, o.Spec.Template.Labels); err != nil {
			return o.Name, err
		}
		return o.Name, firstErr(checkMeta(&o.ObjectMeta), checkPod(&o.Spec.Template.Spec))
	case *appsv1.Deployment:
		if err := checkSelector(o.Spec.Selector, o.Spec.Template.Labels); err != nil {
			return o.Name, err
		}
		return o.Name, firstErr(checkMeta(&o.ObjectMeta), checkPod(&o.Spec.Template.Spec))
	case *corev1.ConfigMap:
		for k, v := range o.Data {
			if _, err := yaml.YAMLToJSON([]byte(v)); strings.HasSuffix(k, ".yaml") && err != nil {
				return o.Name, fmt.Errorf("data.%s is not YAML: %v", k, err)
			}
		}
		return o.Name, checkMeta(&o.ObjectMeta)
	case *corev1.Namespace:
		return o.Name, checkMeta(&o.ObjectMeta)
	case *corev1.Service:
		return o.Name, checkMeta(&o.ObjectMeta)
	case *corev1.ServiceAccount:
		return o.Name, checkMeta(&o.ObjectMeta)
	case *rbacv1.ClusterRole:
		return o.Name, checkMeta(&o.ObjectMeta)
	case *rbacv1.ClusterRoleBinding:
		return o.Name, checkMeta(&o.ObjectMeta)
	}
	return "", fmt.Errorf("no check for %T", obj)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func validate(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, doc := range docSplit.Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return out, fmt.Errorf("document %d: %v", i+1, err)
		}
		mk, ok := kinds[tm.APIVersion+" "+tm.Kind]
		if !ok {
			return out, fmt.Errorf("document %d: unknown apiVersion/kind %q %q", i+1, tm.APIVersion, tm.Kind)
		}
		obj := mk()
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return out, fmt.Errorf("document %d (%s): %v", i+1, tm.Kind, err)
		}
		name, err := check(obj)
		if err != nil {
			return out, fmt.Errorf("document %d (%s/%s): %v", i+1, tm.Kind, name, err)
		}
		out = append(out, tm.Kind+"/"+name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no documents")
	}
	return out, nil
}

func stripComments(doc string) string {
	var b bytes.Buffer
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: stackscope-k8s-validator FILE...")
		os.Exit(2)
	}
	status := 0
	for _, path := range os.Args[1:] {
		objs, err := validate(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			status = 1
			continue
		}
		fmt.Println(strings.Join(objs, " "))
	}
	os.Exit(status)
}
