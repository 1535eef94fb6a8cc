package config

import (
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
)

// oidcEnv is a complete OIDC configuration; each case changes a part.
func oidcEnv(change map[string]string) map[string]string {
	kv := map[string]string{
		"WAITROOM_OIDC_ISSUER":        "https://id.example.com/realms/shop",
		"WAITROOM_OIDC_CLIENT_ID":     "waitroom",
		"WAITROOM_OIDC_CLIENT_SECRET": "s3cret-from-the-provider",
		"WAITROOM_PUBLIC_URL":         "https://queue.example.com",
		"WAITROOM_OIDC_ROLES":         "wr-admin=admin,wr-ops=operator:sale|refund,wr-view=viewer",
	}
	for k, v := range change {
		if v == "" {
			delete(kv, k)
		} else {
			kv[k] = v
		}
	}
	return kv
}

func TestOIDCConfig(t *testing.T) {
	cfg, err := Load(env(oidcEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Admin.OIDC
	if o == nil || o.RedirectURL != "https://queue.example.com/admin/callback" || o.RolesClaim != "groups" ||
		len(o.Roles["wr-ops"]) != 1 || o.Roles["wr-ops"][0].Role != adminauth.Operator || !cfg.Admin.Enabled() {
		t.Fatalf("%+v", o)
	}
	if cfg.Admin.SessionIdle != 30*time.Minute || cfg.Admin.SessionMax != 12*time.Hour {
		t.Fatalf("sessions %s %s", cfg.Admin.SessionIdle, cfg.Admin.SessionMax)
	}
	for _, c := range []struct {
		name   string
		change map[string]string
		want   string // a variable named in the error
	}{
		{"http issuer", map[string]string{"WAITROOM_OIDC_ISSUER": "http://id.example.com"}, "WAITROOM_OIDC_ISSUER"},
		{"no client id", map[string]string{"WAITROOM_OIDC_CLIENT_ID": ""}, "WAITROOM_OIDC_CLIENT_ID"},
		{"no client secret", map[string]string{"WAITROOM_OIDC_CLIENT_SECRET": ""}, "WAITROOM_OIDC_CLIENT_SECRET"},
		{"no public URL", map[string]string{"WAITROOM_PUBLIC_URL": ""}, "WAITROOM_PUBLIC_URL"},
		{"http public URL", map[string]string{"WAITROOM_PUBLIC_URL": "http://queue.example.com"}, "WAITROOM_PUBLIC_URL"},
		{"no roles", map[string]string{"WAITROOM_OIDC_ROLES": ""}, "WAITROOM_OIDC_ROLES"},
		{"unknown role", map[string]string{"WAITROOM_OIDC_ROLES": "wr=root"}, "WAITROOM_OIDC_ROLES"},
		{"scoped admin", map[string]string{"WAITROOM_OIDC_ROLES": "wr=admin:sale"}, "WAITROOM_OIDC_ROLES"},
		{"client without issuer", map[string]string{"WAITROOM_OIDC_ISSUER": ""}, "WAITROOM_OIDC_CLIENT_ID"},
		{"idle over max", map[string]string{"WAITROOM_ADMIN_SESSION_IDLE": "13h"}, "WAITROOM_ADMIN_SESSION_IDLE"},
		{"max over a week", map[string]string{"WAITROOM_ADMIN_SESSION_MAX": "200h"}, "WAITROOM_ADMIN_SESSION_IDLE"},
		{"insecure cookies", map[string]string{"WAITROOM_COOKIE_SECURE": "false"}, "WAITROOM_COOKIE_SECURE"},
		{"admin token like an API token", map[string]string{"WAITROOM_ADMIN_TOKEN": "wrt_" + strings.Repeat("x", 40)}, "WAITROOM_ADMIN_TOKEN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Load(env(oidcEnv(c.change))); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error naming %s", err, c.want)
			}
		})
	}
	// Loopback http: tests and local development only.
	cfg, err = Load(env(oidcEnv(map[string]string{"WAITROOM_OIDC_ISSUER": "http://127.0.0.1:9000", "WAITROOM_PUBLIC_URL": "http://localhost:8080",
		"WAITROOM_OIDC_ROLES_CLAIM": "roles"})))
	if err != nil || cfg.Admin.OIDC.RolesClaim != "roles" {
		t.Fatalf("loopback: %v", err)
	}
	// Without a provider nor a token, nobody can sign in.
	cfg, err = Load(env(map[string]string{}))
	if err != nil || cfg.Admin.Enabled() || cfg.Admin.OIDC != nil {
		t.Fatalf("default: %+v %v", cfg.Admin, err)
	}
}
