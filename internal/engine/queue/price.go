package queue

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// The price of a place. The rate limits bound how fast a
// client makes places, not how many it holds: one IPv4 address held 300
// at once, a home IPv6 /56 256 × 300. So a place costs proof of work that
// rises with the places the client's network already holds in the line,
// and with the queue's arrival rate while it is flooded:
//
//	difficulty(n, p) = 0                                  for n = 0
//	                 = min(32, Bits + p + ceil(log2(n²)))  for n ≥ 1
//
// in leading zero bits, n the places the network holds now and p the
// pressure bits (below). The expected work of the next place is then
// 2^(Bits+p) × n² hashes, and of the first n places about 2^Bits × n³/3:
// a person alone on their network pays nothing for their place (only the
// queue's own challenge_difficulty, as ever), a second tab 2^Bits hashes,
// and a network holding 300 places 2^Bits × 90,000 for its next. The
// curve and what it costs in Go and in a browser are in
// docs/attacks/bots.md.
//
// Which network: the client's /24 (IPv4) or /56 (IPv6), and for IPv6
// also its /48 counted at a SiteShare-th (a /48 holding 4 × 300 places
// pays as a /56 holding 300): n is the larger of the two. A network's
// first place is a bit in a bitmap of the networks seen in the window
// (keys.seen, seenBits bits at an offset of the network's FNV-1a hash,
// seenOffset; this window's and the last one's are read), so that a crowd
// spread over many networks costs Redis no key per person. From its
// second place on a network holds a ZSET of its places (keys.netPlaces:
// member=user, score=arrival number, 0 in a scheduled opening's draw,
// with a stand-in for the first), trimmed of those the head of the line
// has passed (admitted, or dropped) whenever it is read, capped at
// heldCap members (beyond which the price is at its ceiling anyway) and
// expiring a window after the network's last new place: memory is a
// fixed 2 × seenBits/8 bytes per queue, and for networks that hold more
// than one place bounded by the line and by heldCap per network. A place
// that left the line before reaching its head is counted until the head
// passes its arrival number, and a network whose places all left still
// counts its bit (one place) for up to two windows: the count can only
// be high, never low, for a network that keeps making places. Two
// networks that share a bit make the later one's first place cost a
// second place's price: with a million networks in a window, 6 % of them.
//
// Pressure: while the queue's arrivals (every network's) run above
// CalmArrivals a second, over a sliding 10-second window, each doubling
// above it adds a bit to every price, up to MaxPressure bits: a flood
// from many networks makes each of them pay more for their second and
// later places, and still nothing for a first.
//
// enter.lua checks a proof against the difficulty the caller's network
// must pay now, counting the calls before it in the same batch, and
// answers a weaker one CHALLENGE with that difficulty; the challenge
// endpoint issues challenges at it (challenge.lua). Both run networks.lua.
type Price struct {
	// Bits is the price's base (1…MaxChallengeDifficulty; 0: no price,
	// only the queue's challenge_difficulty applies).
	Bits int
	// CalmArrivals is the queue's arrival rate (a second) up to which the
	// price feels no pressure (0: never any).
	CalmArrivals float64
	// MaxBits is the ceiling: no place costs more proof of work than
	// this, whatever its network holds, its class or the pressure (the
	// queue's challenge_difficulty included). Beyond it a network meets
	// its rate limits and, where configured, the human check.
	MaxBits int
}

// DefaultMaxBits is the ceiling's default: 2^17 hashes, about 2 s in
// Chromium on a quiet desktop and under 10 s on a slow phone.
const DefaultMaxBits = 17

// A queue's human_check: when its human check is asked (price_need in
// networks.lua).
const (
	HumanOff      = "off"
	HumanEscalate = "escalate"
	HumanAlways   = "always"
)

// Pricing is how the price of a place applies to a caller.
type Pricing uint8

// The pricings.
const (
	// PriceByNetwork prices a place by the places its networks hold.
	PriceByNetwork Pricing = iota
	// PriceNone: an account (a site's join token) is one person, who
	// holds one place per queue whatever network it comes from.
	PriceNone
	// PriceCeiling: a network of the hosting class (a data centre, a VPN
	// exit) pays the ceiling, or the human check, for every place.
	PriceCeiling
)

// Constants of the price, mirrored in networks.lua (TestPriceMatchesLua).
const (
	// MaxPressure bounds the bits a flood of arrivals adds.
	MaxPressure = 4
	// SiteShare: an IPv6 /48 holding SiteShare × n places pays as a /56
	// holding n.
	SiteShare = 4
	// heldCap bounds a network's count of places (4096² × 2 > 2^32).
	heldCap = 4096
	// A window of a replica's filter of networks seen (seen.go) is
	// seenShards × seenBlocks 32-bit blocks (8 MiB in all, taken a
	// shard at a time as networks land), and a network sets seenProbes
	// bits of one block: with a million networks in each of the two
	// windows read, about 0.05 % of first places find all their bits set
	// by others (TestSeenFilterFalsePositives).
	seenShards = 256
	seenBlocks = 8192
	seenProbes = 5
	// seenWindow is a filter's window, and how long a network's ZSET is
	// kept after its last new place (PRICE_HELD_TTL_MS in networks.lua).
	seenWindow = 2 * time.Hour
)

// seenHash is network's hash for the seen filter (seenSlot): the same on
// every replica (FNV-1a, not a seeded hash, then
// MurmurHash3's finalizer, since FNV-1a leaves the middle bits of
// strings that differ in their last bytes almost alike, and networks'
// names do).
func seenHash(network string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(network); i++ {
		h ^= uint64(network[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h >> 16
}

// PriceDifficulty is the proof of work (leading zero bits) the next place
// of a network holding held places costs at base bits and pressure bits:
// the formula above, the same as price_difficulty in networks.lua.
func PriceDifficulty(bits, held, pressure int) int {
	if bits <= 0 || held <= 0 {
		return 0
	}
	held = min(held, heldCap)
	sq, log := uint64(held)*uint64(held), 0
	for uint64(1)<<log < sq { // log = ceil(log2(held²))
		log++
	}
	return min(bits+max(0, min(pressure, MaxPressure))+log, MaxChallengeDifficulty)
}

// Validate checks the price's settings.
func (p Price) Validate() error {
	if p.Bits < 0 || p.Bits > MaxChallengeDifficulty || p.CalmArrivals < 0 || math.IsNaN(p.CalmArrivals) || math.IsInf(p.CalmArrivals, 0) {
		return fmt.Errorf("queue: price of a place: bits %d, calm arrivals %v: want bits 0…%d and arrivals ≥ 0", p.Bits, p.CalmArrivals, MaxChallengeDifficulty)
	}
	if p.MaxBits < 0 || p.MaxBits > MaxChallengeDifficulty { // 0: DefaultMaxBits
		return fmt.Errorf("queue: price of a place: ceiling %d bits: want 1…%d (0: the default)", p.MaxBits, MaxChallengeDifficulty)
	}
	return nil
}

// ceiling is MaxBits, or its default for a Price that names none.
func (p Price) ceiling() int {
	if p.MaxBits == 0 {
		return DefaultMaxBits
	}
	return p.MaxBits
}

// args are the price's script arguments (networks.lua): bits, calm
// arrivals a second, and the ceiling.
func (p Price) args() []any {
	return []any{strconv.Itoa(p.Bits), strconv.FormatFloat(p.CalmArrivals, 'g', -1, 64), strconv.Itoa(p.ceiling())}
}
