package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Lanes: a queue's line may be split into lanes, each with a
// reserved share of every interval's budget; what the shares leave is the
// general lane (""). A place joins a lane only through a site's join
// token that names it, and its member id says so: "l:<lane>:<sub>"
// (LaneMember), so every call that names a member reaches its lane's line
// without a lookup. A lane is a line of its own in Redis (keysForLine):
// its waiting ZSET, heard, held, stale, draw, arrival counter, checkpoints
// and history; the admissions (entered), the tokens, the config and the
// tick are the queue's, so max_active counts everyone and one tick per
// interval admits from every lane (tick_lines.lua).

// Lane is one lane of a queue: its name and the share of each interval's
// budget reserved for it.
type Lane struct {
	Name  string  `json:"name"`
	Share float64 `json:"share"`
}

// Lanes is a queue's lanes, in the order given (the tick's tie order).
type Lanes []Lane

// MaxLanes bounds a queue's lanes: each is a line the tick walks.
const MaxLanes = 8

// MaxLaneRefs bounds the lines a replica keeps per queue (lanes as named
// by the places it has seen, configured or since removed): every lane ref
// holds its keys and batchers.
const MaxLaneRefs = 64

var laneName = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)

// ErrInvalidLanes is a lanes setting refused (400 invalid_lanes).
var ErrInvalidLanes = errors.New("invalid lanes")

// ErrUnknownLane is a join token naming a lane the queue does not have
// (400 invalid_lane).
var ErrUnknownLane = errors.New("queue: unknown lane")

// CheckLaneName reports whether name may name a lane: [a-z0-9-]{1,32}.
func CheckLaneName(name string) bool { return laneName.MatchString(name) }

// Validate checks the lanes: at most MaxLanes, names [a-z0-9-]{1,32}
// without repeats, shares in (0, 1] summing to at most 1.
func (ls Lanes) Validate() error {
	if len(ls) > MaxLanes {
		return lanesError("at most %d lanes", MaxLanes)
	}
	sum, seen := 0.0, map[string]bool{}
	for _, l := range ls {
		if !CheckLaneName(l.Name) {
			return lanesError("lane name %q must be 1-32 of a-z, 0-9 and -", l.Name)
		}
		if seen[l.Name] {
			return lanesError("lane %q given twice", l.Name)
		}
		seen[l.Name] = true
		if !(l.Share > 0 && l.Share <= 1) {
			return lanesError("lane %q: share must be more than 0 and at most 1", l.Name)
		}
		sum += l.Share
	}
	if sum > 1+1e-9 {
		return lanesError("the shares sum to %g, more than 1", sum)
	}
	return nil
}

func lanesError(format string, a ...any) error {
	return &FieldError{Field: "lanes", Err: fmt.Errorf("%w: "+format, append([]any{ErrInvalidLanes}, a...)...)}
}

// Has reports whether the lanes include one named name.
func (ls Lanes) Has(name string) bool {
	for _, l := range ls {
		if l.Name == name {
			return true
		}
	}
	return false
}

// Share is lane name's share ("": the general lane's, what the others
// leave; 0 for a lane not among them).
func (ls Lanes) Share(name string) float64 {
	sum := 0.0
	for _, l := range ls {
		if l.Name == name {
			return l.Share
		}
		sum += l.Share
	}
	if name == "" {
		return max(0, 1-sum)
	}
	return 0
}

// encode is the lanes as the config HASH holds them: JSON, "" for none.
func (ls Lanes) encode() string {
	if len(ls) == 0 {
		return ""
	}
	b, _ := json.Marshal(ls) // names and finite floats: never fails
	return string(b)
}

// ParseLanes reads lanes from JSON ([{"name": "priority", "share": 0.3}])
// and validates them; "" and "null" are none.
func ParseLanes(s string) (Lanes, error) {
	if t := strings.TrimSpace(s); t == "" || t == "null" {
		return nil, nil
	}
	var ls Lanes
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ls); err != nil || dec.More() {
		return nil, lanesError("must be a list of {\"name\", \"share\"}")
	}
	if err := ls.Validate(); err != nil {
		return nil, err
	}
	return ls, nil
}

// lanePrefix starts the member id of a place in a lane.
const lanePrefix = "l:"

// LaneMember is the member id of the site user sub's place in lane:
// "l:<lane>:<sub>" ("u:<sub>" in the general lane, place.Join).
func LaneMember(lane, sub string) string { return lanePrefix + lane + ":" + sub }

// AccountMember is the member id of site account sub's place in lane's
// line: "u:<sub>" in the general lane ("", place.Join), else LaneMember.
func AccountMember(lane, sub string) string {
	if lane == "" {
		return accountPrefix + sub
	}
	return LaneMember(lane, sub)
}

// accountPrefix starts the member id of an account's place in the
// general lane.
const accountPrefix = "u:"

// accountOf is the account a join's member id names (AccountMember's
// inverse; "" for a member id that names none).
func accountOf(member string) string {
	if sub, ok := strings.CutPrefix(member, accountPrefix); ok {
		return sub
	}
	if lane := LaneOf(member); lane != "" {
		return member[len(lanePrefix)+len(lane)+1:]
	}
	return ""
}

// LaneOf is the lane of member's place ("": the general lane).
func LaneOf(member string) string {
	rest, ok := strings.CutPrefix(member, lanePrefix)
	if !ok {
		return ""
	}
	lane, _, ok := strings.Cut(rest, ":")
	if !ok || !CheckLaneName(lane) {
		return ""
	}
	return lane
}

// MarshalJSON writes no lanes as [], never null.
func (ls Lanes) MarshalJSON() ([]byte, error) {
	if ls == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]Lane(ls))
}
