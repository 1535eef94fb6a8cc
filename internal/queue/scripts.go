package queue

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Each state change is one Lua script, run atomically with EVALSHA (go-redis
// falls back to EVAL and caches the script when Redis does not know it yet,
// e.g. after a restart). common.lua is prepended to each so the scripts
// share one definition of the clock, the config and the ETA; before it
// comes the reading of the settings they use, written from Catalog
// (configLua).

//go:embed scripts/common.lua
var commonSrc string

var commonLua = configLua(Catalog) + commonSrc

//go:embed scripts/enter.lua
var enterLua string

//go:embed scripts/status.lua
var statusLua string

//go:embed scripts/leave.lua
var leaveLua string

//go:embed scripts/tick.lua
var tickLua string

//go:embed scripts/info.lua
var infoLua string

//go:embed scripts/done.lua
var doneLua string

//go:embed scripts/renew.lua
var renewLua string

//go:embed scripts/challenge.lua
var challengeLua string

// networks.lua holds the defences kept per network of the client (the
// wider networks' limits and the price of a place, price.go): enter.lua
// and challenge.lua get it after common.lua.
//
//go:embed scripts/networks.lua
var networksLua string

//go:embed scripts/settings.lua
var settingsLua string

var (
	enterScript     = redis.NewScript(commonLua + networksLua + enterLua)
	statusScript    = redis.NewScript(commonLua + statusLua)
	leaveScript     = redis.NewScript(commonLua + leaveLua)
	tickScript      = redis.NewScript(commonLua + tickLua)
	infoScript      = redis.NewScript(commonLua + infoLua)
	doneScript      = redis.NewScript(commonLua + doneLua)
	renewScript     = redis.NewScript(commonLua + renewLua)
	challengeScript = redis.NewScript(commonLua + networksLua + challengeLua)
	settingsScript  = redis.NewScript(commonLua + settingsLua)
)

//go:embed scripts/snapshot.lua
var snapshotLua string

var snapshotScript = redis.NewScript(commonLua + snapshotLua)

// configLua is the Lua that reads the settings the scripts use, the rows
// of catalog marked Lua, in its order, for queue_config (common.lua):
//
//	DEFAULTS         ARGV[1..DEFAULTS] of a script that reads them: the
//	                 replica's defaults (scriptDefaults), then the lane
//	config_read(key) one HMGET of their config HASH fields (and of
//	                 configState's)
//	config_of(v)     the table of its reply, by HASH field: a number
//	                 unless the Kind is text, and while not stored the
//	                 replica's default (SeedAlways) or the Kind's zero (the
//	                 first of its Choices); config_of({}) is the defaults
//
// Written once as the package loads, not sent with every call (say as one
// ARGV string to split): enter and status, the hot path, neither send nor
// parse the list, their ARGV stays as it was, and the list is part of the
// script's SHA, the same for every replica of one version. Written out
// field by field, one table constructor, so reading the settings by name
// costs about what reading them by position did (a loop over a list of
// fields cost 1.7 µs more a call, measured).
func configLua(catalog []Setting) string {
	var fields, values []string
	arg := 0 // the replica's defaults taken from ARGV so far
	for _, st := range catalog {
		if !st.Lua {
			continue
		}
		fields = append(fields, luaQuote(st.Hash))
		v, def := fmt.Sprintf("v[%d]", len(fields)), "0"
		if st.Kind.number() {
			v = "tonumber(" + v + ")"
		}
		switch {
		case st.Seed == SeedAlways:
			arg++
			def = fmt.Sprintf("ARGV[%d]", arg)
			if st.Kind.number() {
				def = "tonumber(" + def + ")"
			}
		case !st.Kind.number() && len(st.Choices) > 0:
			def = luaQuote(st.Choices[0])
		case !st.Kind.number():
			def = "''"
		}
		values = append(values, "    "+st.Hash+" = "+v+" or "+def+",\n")
	}
	for _, f := range configState {
		fields = append(fields, luaQuote(f))
		values = append(values, fmt.Sprintf("    %s = tonumber(v[%d]),\n", f, len(fields)))
	}
	return "-- The settings the scripts read, written from queue.Catalog by configLua (scripts.go).\n" +
		fmt.Sprintf("local DEFAULTS = %d\n", arg+1) +
		"local function config_read(key)\n" +
		"  return redis.call('HMGET', key, " + strings.Join(fields, ", ") + ")\n" +
		"end\n" +
		"local function config_of(v)\n" +
		"  return {\n" + strings.Join(values, "") + "  }\n" +
		"end\n\n"
}

// configState are the config HASH fields the scripts keep themselves
// beside the settings, read with them into queue_config's table (a
// number, nil while not stored): the effective refill of the automatic
// rate (tick.lua).
var configState = []string{"refill_effective"}

// scriptDefaults are the replica's defaults d as configLua's scripts take
// them in ARGV[1..DEFAULTS - 1]: the values of the rows it reads there,
// in Catalog order, as the config HASH holds them.
func scriptDefaults(d Settings) []any {
	var args []any
	for _, st := range Catalog {
		if st.Lua && st.Seed == SeedAlways {
			v, _ := st.Of(d) // a SeedAlways row has a Settings field (TestCatalogMatchesTheTypes)
			args = append(args, st.encode(v))
		}
	}
	return args
}

// luaQuote is s as a Lua string literal. The catalog's HASH fields and
// choices are plain words (TestQueueConfig), which need no escapes.
func luaQuote(s string) string { return "'" + s + "'" }
