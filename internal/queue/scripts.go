package queue

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// Each state change is one Lua script, run atomically with EVALSHA (go-redis
// falls back to EVAL and caches the script when Redis does not know it yet,
// e.g. after a restart). common.lua is prepended to each so the scripts
// share one definition of the clock, the config and the ETA.

//go:embed scripts/common.lua
var commonLua string

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
