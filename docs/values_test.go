package docs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

var update = flag.Bool("update", false, "rewrite testdata/golden with the values the configurations load to")

const goldenDir = "testdata/golden"

// reference is the page whose YAML blocks are sections of a configuration
// (source:, nats:, groups: …); the other pages' incomplete blocks are
// other programs' files (Prometheus rules, KEDA objects).
const reference = "docs/configuration.md"

// section completes a section of the configuration reference into a
// configuration: it adds a source when the block has none, and a group
// when it has none, named as the sections refer to one (writeback.rules:
// [latency/*, request_rate]).
func section(text string) string {
	keys := map[string]bool{}
	for _, m := range topKeyRE.FindAllStringSubmatch(text, -1) {
		keys[m[1]] = true
	}
	if !keys["source"] {
		text = "source: {url: http://127.0.0.1:8428}\n" + text
	}
	if !keys["groups"] {
		text += "groups: [{name: latency, rules: [{name: request_rate, expr: up}]}]\n"
	}
	return text
}

// TestConfigurationValues: every complete configuration of the manual,
// every section of the configuration reference, and every configuration
// file of examples/ and testdata/config/*.good.yaml loads to the values
// written in testdata/golden, one file per page or configuration file:
// rulefmt.Config field by field, positions included. A change to the
// file format that changes what a configuration means shows as a
// difference here; when the change is meant, -update rewrites the files.
func TestConfigurationValues(t *testing.T) {
	dumps := map[string]*strings.Builder{}
	add := func(source, name string, cfg *rulefmt.Config) {
		b := dumps[source]
		if b == nil {
			b = &strings.Builder{}
			dumps[source] = b
		}
		fmt.Fprintf(b, "## %s\n", name)
		dump(b, "Config", reflect.ValueOf(cfg).Elem(), 0)
	}
	// The blocks load from a directory holding the files they name
	// (creds_file, ca_file, …), which the file format reads or checks.
	dir := t.TempDir()
	counts := map[string]int{}
	load := func(page string, line int, text string) {
		counts[page]++
		name := fmt.Sprintf("%s-%d.yml", path.Base(page), counts[page])
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, m := range fileKeyRE.FindAllStringSubmatch(text, -1) {
			if err := writeNamedFile(filepath.Join(dir, m[2]), m[1]); err != nil {
				t.Fatal(err)
			}
		}
		cfg, err := rulefmt.Load(file)
		if err != nil {
			t.Errorf("%s:%d: %v", page, line, err)
			return
		}
		add(page, name, cfg)
	}
	for _, p := range manual(t) {
		for _, b := range p.blocks {
			if b.info != "yaml" && b.info != "yml" {
				continue
			}
			text := strings.Join(b.lines, "\n") + "\n"
			switch {
			case p.path == reference:
				load(p.path, b.line, section(text))
			case isConfiguration(text):
				load(p.path, b.line, text)
			}
		}
	}
	var files []string
	for _, pattern := range []string{"examples/*.yml", "examples/*.yaml", "testdata/config/*.good.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no configuration file in examples/ or testdata/config/")
	}
	for _, file := range files {
		cfg, err := rulefmt.Load(file)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		rel, _ := filepath.Rel(root, file)
		add(filepath.ToSlash(rel), filepath.ToSlash(rel), cfg)
	}

	want := map[string]bool{}
	for source, b := range dumps {
		text := strings.ReplaceAll(b.String(), dir+string(filepath.Separator), "")
		name := strings.ReplaceAll(source, "/", "_") + ".txt"
		want[name] = true
		golden := filepath.Join(goldenDir, name)
		if *update {
			if err := os.MkdirAll(goldenDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(golden)
		if err != nil {
			t.Errorf("%s: %v (go test ./docs -run TestConfigurationValues -update writes it)", source, err)
			continue
		}
		if d := firstDifference(string(old), text); d != "" {
			t.Errorf("%s loads to other values than %s:\n%s", source, golden, d)
		}
	}
	entries, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !want[e.Name()] {
			if *update {
				os.Remove(filepath.Join(goldenDir, e.Name()))
				continue
			}
			t.Errorf("%s: no configuration of that name any more; remove it, or run -update", filepath.Join(goldenDir, e.Name()))
		}
	}
}

// fileKeyRE finds the relative paths a block names as a file.
var fileKeyRE = regexp.MustCompile(`\b([a-z_]*_file):\s*([A-Za-z0-9][A-Za-z0-9._-]*)`)

// writeNamedFile writes a file a configuration names under key: a CA
// certificate for ca_file, a line of text for the others.
func writeNamedFile(name, key string) error {
	if key != "ca_file" {
		return os.WriteFile(name, []byte("secret\n"), 0o600)
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return err
	}
	return os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// firstDifference shows the first lines in which want and got differ, or
// returns "" when they do not.
func firstDifference(want, got string) string {
	if want == got {
		return ""
	}
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(wl), len(gl)) && shown < 10; i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d:\n\twant %s\n\tgot  %s\n", i+1, w, g)
			shown++
		}
	}
	return b.String()
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	locationType = reflect.TypeFor[time.Location]()
)

// dump writes v as one line per value, "path = value", following
// pointers, interfaces (naming their type), slices and maps (by sorted
// key), unexported fields included.
func dump(b *strings.Builder, at string, v reflect.Value, depth int) {
	if depth > 40 {
		fmt.Fprintf(b, "%s = (too deep)\n", at)
		return
	}
	switch {
	case v.Type() == durationType:
		fmt.Fprintf(b, "%s = %s\n", at, time.Duration(v.Int()))
		return
	case v.Type() == locationType:
		fmt.Fprintf(b, "%s = %s\n", at, v.FieldByName("name").String())
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			fmt.Fprintf(b, "%s = nil\n", at)
			return
		}
		dump(b, at, v.Elem(), depth+1)
	case reflect.Interface:
		if v.IsNil() {
			fmt.Fprintf(b, "%s = nil\n", at)
			return
		}
		dump(b, at+"("+v.Elem().Type().String()+")", v.Elem(), depth+1)
	case reflect.Struct:
		if v.NumField() == 0 {
			fmt.Fprintf(b, "%s = {}\n", at)
		}
		for i := range v.NumField() {
			dump(b, at+"."+v.Type().Field(i).Name, v.Field(i), depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			fmt.Fprintf(b, "%s = nil\n", at)
			return
		}
		if v.Len() == 0 {
			fmt.Fprintf(b, "%s = []\n", at)
		}
		for i := range v.Len() {
			dump(b, fmt.Sprintf("%s[%d]", at, i), v.Index(i), depth+1)
		}
	case reflect.Map:
		if v.IsNil() {
			fmt.Fprintf(b, "%s = nil\n", at)
			return
		}
		if v.Len() == 0 {
			fmt.Fprintf(b, "%s = {}\n", at)
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return scalar(keys[i]) < scalar(keys[j]) })
		for _, k := range keys {
			dump(b, at+"["+scalar(k)+"]", v.MapIndex(k), depth+1)
		}
	case reflect.Func, reflect.Chan:
		fmt.Fprintf(b, "%s = %s, nil: %t\n", at, v.Kind(), v.IsNil())
	default:
		fmt.Fprintf(b, "%s = %s\n", at, scalar(v))
	}
}

// scalar formats a value of a basic kind.
func scalar(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return strconv.Quote(v.String())
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return v.Kind().String()
}
