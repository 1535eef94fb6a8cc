package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
)

// Who arrives at the opening: people (behind carriers' shared ranges,
// signed in, or alone on their network) and three bot farms.
type kind uint8

const (
	carrierPerson   kind = iota // a person behind a carrier's NAT, in a shared range
	member                      // a signed-in member (a site's join token)
	loner                       // a person alone on their network
	hostingFarm                 // a bot farm in a data centre
	residentialFarm             // a bot farm renting residential proxies
	carrierFarm                 // a bot farm on a carrier /24, posing as its people
	kinds
)

var kindNames = [kinds]string{"behind a carrier's NAT", "signed-in member", "alone on a network",
	"hosting farm (data centre)", "residential farm", "carrier farm (one /24)"}

func (k kind) person() bool { return k <= loner }

// The address plan. The networks file of ways 2 and 3 (networksFile)
// classes the carriers' /16 shared and the data centre's /16 hosting;
// everything else is default.
const (
	carrierRange = "11.0.0.0/16" // people's /24s from 11.0.0.0, the carrier farm's at 11.0.200.0
	hostingRange = "11.1.0.0/16" // the hosting farm's /24s
	// The residential farm's /24s start at 11.2.0.0, members' at
	// 11.16.0.0, loners' at 11.64.0.0: one /24 after another.
	residentialFrom = 11<<24 | 2<<16
	memberFrom      = 11<<24 | 16<<16
	lonerFrom       = 11<<24 | 64<<16
	carrierFarmNet  = 11<<24 | 200<<8
)

// networksFile is the operator's file of ways 2 and 3 (netclass.Parse).
const networksFile = "# the carriers' ranges: many people behind each address block\n" +
	carrierRange + " shared\n" +
	"# the data centre the hosting farm rents\n" +
	hostingRange + " hosting\n"

// shape is the opening at scale 1: per-network densities stay the same
// at any scale, only the number of networks scales, so that the price a
// network meets is the full-scale one.
type shape struct {
	people                         int     // 20,000
	carrierShare, memberShare      float64 // of the people: 40 %, 30 %; the rest alone
	perCarrier24, membersPer24     int     // people per carrier /24 (200), members per ordinary /24 (5)
	farmPlaces                     int     // places each farm wants (2,000)
	hostingPer24, residentialPer24 int     // 100 per data-centre /24 (20 /24s), 10 per residential /24 (200)
	carrierFarmAddrs               int     // addresses of its /24 the carrier farm gets (256)
	// perCarrierAddr is how many of a carrier /24's people share one
	// address (1: each their own; a carrier's NAT puts many subscribers
	// behind each of its addresses).
	perCarrierAddr int
	// farmAmongPeople puts the carrier farm on the /24 of the first 200
	// carrier people (11.0.0.0/24), sharing their addresses, instead of
	// a /24 of its own in the same range (11.0.200.0/24).
	farmAmongPeople bool
}

var fullShape = shape{
	people: 20_000, carrierShare: 0.40, memberShare: 0.30, perCarrier24: 200, membersPer24: 5,
	farmPlaces: 2_000, hostingPer24: 100, residentialPer24: 10, carrierFarmAddrs: 256, perCarrierAddr: 1,
}

// agent is one place someone wants.
type agent struct {
	user string
	addr netip.Addr
	kind kind
}

// population is the opening at scale, in arrival order (shuffled with
// seed), and how many networks each kind spreads over.
func population(sh shape, scale float64, seed uint64) (arrivals []agent, networks [kinds]int) {
	n := func(x int) int { return max(1, int(math.Round(float64(x)*scale))) }
	people := n(sh.people)
	carriers := int(math.Round(float64(people) * sh.carrierShare))
	members := int(math.Round(float64(people) * sh.memberShare))
	loners := people - carriers - members
	places := n(sh.farmPlaces)
	addr := func(base uint32, i, per int) netip.Addr {
		v := base + uint32(i/per)<<8 + uint32(i%per) + 1 // hosts .1 up
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	add := func(k kind, count int, at func(i int) netip.Addr) {
		for i := range count {
			arrivals = append(arrivals, agent{user: fmt.Sprintf("k%d-%d", k, i), addr: at(i), kind: k})
		}
	}
	add(carrierPerson, carriers, func(i int) netip.Addr {
		net, host := i/sh.perCarrier24, i%sh.perCarrier24/max(1, sh.perCarrierAddr)
		return addr(11<<24, net*sh.perCarrier24+host, sh.perCarrier24)
	})
	add(member, members, func(i int) netip.Addr { return addr(memberFrom, i, sh.membersPer24) })
	add(loner, loners, func(i int) netip.Addr { return addr(lonerFrom, i, 1) })
	add(hostingFarm, places, func(i int) netip.Addr { return addr(11<<24|1<<16, i, sh.hostingPer24) })
	add(residentialFarm, places, func(i int) netip.Addr { return addr(residentialFrom, i, sh.residentialPer24) })
	// The carrier farm's places share the addresses it could get, all in
	// one /24 (.0 to .255 at full scale).
	addrs, farmNet := min(256, n(sh.carrierFarmAddrs)), uint32(carrierFarmNet)
	if sh.farmAmongPeople {
		farmNet = 11 << 24
	}
	add(carrierFarm, places, func(i int) netip.Addr {
		v := farmNet + uint32(i%addrs)
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	})
	ceil := func(a, b int) int { return (a + b - 1) / b }
	networks = [kinds]int{
		carrierPerson: ceil(carriers, sh.perCarrier24), member: ceil(members, sh.membersPer24), loner: loners,
		hostingFarm: ceil(places, sh.hostingPer24), residentialFarm: ceil(places, sh.residentialPer24), carrierFarm: 1,
	}
	r := rand.New(rand.NewPCG(seed, 0x63726f7764)) // "crowd"
	r.Shuffle(len(arrivals), func(i, j int) { arrivals[i], arrivals[j] = arrivals[j], arrivals[i] })
	return arrivals, networks
}
