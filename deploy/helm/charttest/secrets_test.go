package charttest

// No secret value anywhere: not in what the chart renders, not in its
// values.yaml or README, not even in its error messages.

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var (
	pemPrivateKey = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----`)
	// scheme://user:password@ with a password that is not a placeholder
	// (<password>, [user:password@]) nor a shell or nginx variable ($PW,
	// $(cat pw)).
	urlPassword = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'"\[\]]*:([^@\s/'"<$\[][^@\s/'"]*)@`)
	tokenRun    = regexp.MustCompile(`[A-Za-z0-9+/_=-]{20,}`)
	hexRun      = regexp.MustCompile(`^[0-9a-fA-F]+$`)
)

// findSecrets returns what in text looks like a secret value: a PEM
// private key, a URL with a password, a long hex string (openssl rand
// -hex), or a long run of mixed letters and digits as random as a base64
// key. The config checksum (a SHA-256 the chart renders) is not a secret.
func findSecrets(text string) []string {
	var found []string
	for _, line := range strings.Split(text, "\n") {
		if pemPrivateKey.MatchString(line) {
			found = append(found, "PEM private key: "+line)
		}
		for _, m := range urlPassword.FindAllStringSubmatch(line, -1) {
			found = append(found, "URL with a password: "+m[0])
		}
		if strings.Contains(line, "checksum/") {
			continue
		}
		for _, tok := range tokenRun.FindAllString(line, -1) {
			if looksRandom(tok) {
				found = append(found, "random-looking value: "+tok)
			}
		}
	}
	return found
}

// looksRandom: 32 or more hex digits, or 20 or more characters with upper
// and lower case letters and digits whose symbols carry over 4 bits each
// (English words and identifiers carry fewer; base64 keys about 5).
func looksRandom(tok string) bool {
	trimmed := strings.Trim(tok, "=-_/")
	if len(trimmed) >= 32 && hexRun.MatchString(trimmed) {
		return true
	}
	var upper, lower, digit bool
	for _, c := range trimmed {
		upper = upper || c >= 'A' && c <= 'Z'
		lower = lower || c >= 'a' && c <= 'z'
		digit = digit || c >= '0' && c <= '9'
	}
	return len(trimmed) >= 20 && upper && lower && digit && entropy(trimmed) > 4
}

// entropy is the Shannon entropy of s's characters, in bits per character.
func entropy(s string) float64 {
	counts := map[rune]int{}
	for _, c := range s {
		counts[c]++
	}
	var h float64
	n := float64(len(s))
	for _, k := range counts {
		p := float64(k) / n
		h -= p * math.Log2(p)
	}
	return h
}

// randomSecrets are fresh secrets of the shapes waitroom's README asks
// for: openssl rand -base64 48, openssl rand -hex 32, a Redis URL with a
// password, an Ed25519 PEM header.
func randomSecrets(t *testing.T) []string {
	t.Helper()
	b := make([]byte, 48)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return []string{
		base64.StdEncoding.EncodeToString(b),
		hex.EncodeToString(b[:32]),
		"rediss://app:" + base64.RawURLEncoding.EncodeToString(b[:18]) + "@redis-master.data:6380/0",
		"-----BEGIN PRIVATE KEY-----",
	}
}

// TestFindSecretsFindsSecrets keeps the scan below honest: it finds fresh
// secrets of every shape, on their own and inside YAML, and passes what
// the chart renders that only looks alike.
func TestFindSecretsFindsSecrets(t *testing.T) {
	for range 20 {
		for _, s := range randomSecrets(t) {
			for _, text := range []string{s, "  value: " + s, `WAITROOM_SECRET: "` + s + `"`} {
				if len(findSecrets(text)) == 0 {
					t.Errorf("not found: %q", text)
				}
			}
		}
	}
	for _, ok := range []string{
		"checksum/config: 6eedff401ce188ff73ae3a05bf1de018c49af4816b24088ffea0700bd7016577",
		"nginx.ingress.kubernetes.io/auth-cache-key: ${scheme}_${remote_addr}_${host}_${request_uri}_${http_cookie}",
		"- name: WAITROOM_OIDC_CLIENT_SECRET",
		"redis-sentinel://<user>:<password>@sentinel-0:26379/0?master_name=mymaster",
		"#   redis://[user:password@]host[:port][/db]",
		"kubectl create secret generic waitroom --from-literal=secret=\"$(openssl rand -base64 48)\"",
		"topology.kubernetes.io/zone",
	} {
		if f := findSecrets(ok); len(f) != 0 {
			t.Errorf("%q taken for a secret: %v", ok, f)
		}
	}
}

// TestNoSecretRendered: nothing any value set renders looks like a secret.
func TestNoSecretRendered(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			t.Parallel()
			for _, f := range findSecrets(mustTemplate(t, vs.file)) {
				t.Error(f)
			}
		})
	}
}

// TestSecretValuesRefused (property): a fresh secret value given to the
// chart under any secret-like name, in config or extraEnv, is refused,
// and neither the output nor the error message repeats it.
func TestSecretValuesRefused(t *testing.T) {
	names := []string{"WAITROOM_SECRET", "WAITROOM_JOIN_SECRET", "WAITROOM_ADMIN_TOKEN", "WAITROOM_WEBHOOK_SECRET", "WAITROOM_OIDC_CLIENT_SECRET", "WAITROOM_REDIS_URL", "Waitroom_Secret", "MY_DB_PASSWORD"}
	for i, name := range names {
		secrets := randomSecrets(t)
		s := secrets[i%len(secrets)]
		for _, where := range []string{"config", "extraEnv"} {
			t.Run(fmt.Sprintf("%s/%s", where, name), func(t *testing.T) {
				t.Parallel()
				var v any = map[string]any{"config": map[string]string{name: s}}
				if where == "extraEnv" {
					v = map[string]any{"extraEnv": []map[string]string{{"name": name, "value": s}}}
				}
				b, err := yaml.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				f := filepath.Join(t.TempDir(), "values.yaml")
				if err := os.WriteFile(f, b, 0o600); err != nil {
					t.Fatal(err)
				}
				out, err := template(t, []string{"testdata/defaults.yaml", f})
				if err == nil {
					t.Fatalf("a secret value under %s.%s was rendered", where, name)
				}
				if strings.Contains(out, s) || strings.Contains(err.Error(), s) {
					t.Errorf("the secret value is repeated in the output or the error: %v", err)
				}
			})
		}
	}
}

// TestValuesHaveNoSecret: values.yaml (comments included) and the README
// hold no secret value, and every value under a secret-like key is a
// key name, empty or a switch, never a secret: existingSecret is empty
// by default and secretKeys name keys.
func TestValuesHaveNoSecret(t *testing.T) {
	for _, file := range []string{"values.yaml", "README.md"} {
		b, err := os.ReadFile(filepath.Join(chartDir, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range findSecrets(string(b)) {
			t.Errorf("%s: %s", file, f)
		}
	}
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	if s, _ := values["existingSecret"].(string); s != "" {
		t.Errorf("existingSecret defaults to %q: the chart must fail until the user names their Secret", s)
	}
	keyName := regexp.MustCompile(`^[-._a-zA-Z0-9]{1,63}$`)
	leaves := map[string]any{}
	flatten("", values, leaves)
	paths := make([]string, 0, len(leaves))
	for p := range leaves {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		v := leaves[p]
		s, isString := v.(string)
		if isString && len(findSecrets(s)) != 0 {
			t.Errorf("values.yaml %s: %q looks like a secret", p, s)
		}
		if !secretLike.MatchString(p) || !isString {
			continue // numbers and switches are no secrets
		}
		switch {
		case strings.HasPrefix(p, "secretKeys.") && strings.HasSuffix(p, ".key") && keyName.MatchString(s):
			// the name of a key of the user's Secret
		case s == "":
			// existingSecret and its kind: empty until the user names one
		default:
			t.Errorf("values.yaml %s = %q: under a secret-like key only a key name of the Secret, or nothing", p, s)
		}
	}
	if len(leaves) < 50 {
		t.Errorf("only %d values read from values.yaml: the walk is broken", len(leaves))
	}
}

// flatten puts every leaf of v in out under its dotted path.
func flatten(prefix string, v any, out map[string]any) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			flatten(join(k), e, out)
		}
	case []any:
		for i, e := range v {
			flatten(join(fmt.Sprint(i)), e, out)
		}
	default:
		out[prefix] = v
	}
}
