/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The capture core shared by tc.bpf.c and xdp.bpf.c: the maps, flow lookup, header parsing and the
 * ring record. The including program defines, before including this file:
 *   WS_CTX                     its context type (struct __sk_buff, struct xdp_md)
 *   WS_LOAD(ctx, off, to, n)   copy n bytes at offset off from the Ethernet header; 0 on success (n is a
 *                              compile-time constant: a header)
 *   WS_LOAD_VAR(ctx, off, to, n) the same for a run-time n (the payload prefix)
 *   WS_LEN(ctx)                bytes of the packet from the Ethernet header
 *   WS_OFFLOADED_VLAN(ctx, p)  record a VLAN tag already removed from the data into p->vlan/n_vlan
 *   WS_OFFLOADED_TCI(ctx)      that tag's full TCI (0 when none)
 *   WS_STAMP(ctx, ev)          fill ev->ts_ns, ts_source, hook_tai_ns, skb_tstamp, skb_hwtstamp, tstamp_type
 *   WS_IFINDEX(ctx), WS_GSO_SEGS(ctx)
 *
 * Headers are read with copying loads, which fail cleanly past the end of the packet: short and
 * malformed packets are counted, never read out of bounds.
 */
#ifndef WIRESTAMP_CAPTURE_H
#define WIRESTAMP_CAPTURE_H

/* Not in vmlinux.h (macros in the UAPI headers). */
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8
#define WS_IPPROTO_TCP 6
#define WS_IPPROTO_UDP 17

/* Set by the loader before load. */
const volatile __u32 snap_len = 64;
/* 0: payload[] holds the L4 payload prefix; 1: the frame prefix from the Ethernet header (events.h). */
const volatile __u32 snap_frame = 0;
const volatile __u32 lookup_mask = WS_LK_EXACT | WS_LK_ANY_ADDR | WS_LK_ANY_VLAN | WS_LK_ANY_BOTH;
/* Wake the ring's reader only once this many bytes of records wait (0: the kernel's default, a wakeup for
 * each record that finds the reader caught up). A wakeup is an irq_work (a self-interrupt on the app's
 * CPU) and then a reader thread scheduled, on the path of the packet that caused it; the reader instead
 * also reads the ring on a short timer (TcOptions::drain_interval), so a batched record waits at most
 * that long. */
const volatile __u32 wake_bytes = 0;
/* The configured flows' ports, bit p of word p / 64 (set by the loader). A packet with neither port here
 * cannot match any flow: one load turns it away, where the flow lookups cost up to eight hash lookups.
 * Most of a trading host's other traffic ends here. */
const volatile __u64 port_bits[1024] = {};

static __always_inline int port_configured(__u16 port)
{
	return (port_bits[(port >> 6) & 1023] >> (port & 63)) & 1;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct ws_flow_key);
	__type(value, struct ws_flow_val);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WS_STAT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Emit the shared types into BTF so the skeleton carries them for Rust. */
struct ws_pkt_event _ws_pkt_event = {};
struct ws_flow_key _ws_flow_key = {};
struct ws_flow_val _ws_flow_val = {};
enum ws_stat _ws_stat = WS_STAT_SEEN;
enum ws_ts_source _ws_ts_source = WS_TS_HW;
enum ws_direction _ws_direction = WS_DIR_INGRESS;

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&stats, &which);

	if (c)
		*c += 1; /* per-CPU slot: no atomics needed */
}

struct parsed {
	__u8 saddr[16];
	__u8 daddr[16];
	__u32 l4_off;
	__u32 ip_end; /* end of the IP datagram as declared */
	__u16 vlan[2];
	__u8 n_vlan;
	__u8 ip_version;
	__u8 proto;
};

static __always_inline struct ws_flow_val *lookup_endpoint(struct ws_flow_key *k, const __u8 *addr, __u16 vlan)
{
	struct ws_flow_val *v;

	if (lookup_mask & WS_LK_EXACT) {
		__builtin_memcpy(k->addr, addr, 16);
		k->vlan = vlan;
		v = bpf_map_lookup_elem(&flows, k);
		if (v)
			return v;
	}
	if (lookup_mask & WS_LK_ANY_VLAN) {
		__builtin_memcpy(k->addr, addr, 16);
		k->vlan = WS_VLAN_ANY;
		v = bpf_map_lookup_elem(&flows, k);
		if (v)
			return v;
	}
	__builtin_memset(k->addr, 0, 16);
	if (lookup_mask & WS_LK_ANY_ADDR) {
		k->vlan = vlan;
		v = bpf_map_lookup_elem(&flows, k);
		if (v)
			return v;
	}
	if (lookup_mask & WS_LK_ANY_BOTH) {
		k->vlan = WS_VLAN_ANY;
		v = bpf_map_lookup_elem(&flows, k);
		if (v)
			return v;
	}
	return NULL;
}

/* Returns 0 when `p` describes an IPv4/IPv6 UDP/TCP packet, else the ws_stat to count. */
static __always_inline int parse_l3(WS_CTX *ctx, struct parsed *p)
{
	struct ethhdr eth;
	__u32 off = sizeof(eth);
	__u16 proto;

	if (WS_LOAD(ctx, 0, &eth, sizeof(eth)))
		return WS_STAT_MALFORMED;
	proto = bpf_ntohs(eth.h_proto);

	WS_OFFLOADED_VLAN(ctx, p); /* a tag the NIC or stack already took out of the data */
#pragma unroll
	for (int i = 0; i < 2; i++) {
		struct vlan_hdr vh;

		if (proto != ETH_P_8021Q && proto != ETH_P_8021AD)
			break;
		if (WS_LOAD(ctx, off, &vh, sizeof(vh)))
			return WS_STAT_MALFORMED;
		if (p->n_vlan < 2)
			p->vlan[p->n_vlan & 1] = bpf_ntohs(vh.h_vlan_TCI) & 0x0fff;
		p->n_vlan++;
		proto = bpf_ntohs(vh.h_vlan_encapsulated_proto);
		off += sizeof(vh);
	}

	if (proto == ETH_P_IP) {
		struct iphdr ip;
		__u32 hlen, tot;

		if (WS_LOAD(ctx, off, &ip, sizeof(ip)))
			return WS_STAT_MALFORMED;
		hlen = ip.ihl * 4;
		tot = bpf_ntohs(ip.tot_len);
		if (ip.version != 4 || hlen < sizeof(ip))
			return WS_STAT_MALFORMED;
		/* tot_len 0: a BIG TCP GSO skb; the datagram runs to the end of the skb. */
		if (tot == 0)
			tot = WS_LEN(ctx) - off;
		if (tot < hlen)
			return WS_STAT_MALFORMED;
		if (bpf_ntohs(ip.frag_off) & 0x1fff)
			return WS_STAT_FRAGMENT;
		if (ip.protocol != WS_IPPROTO_TCP && ip.protocol != WS_IPPROTO_UDP)
			return WS_STAT_UNSUPPORTED;
		p->ip_version = 4;
		p->proto = ip.protocol;
		p->saddr[10] = 0xff;
		p->saddr[11] = 0xff;
		p->daddr[10] = 0xff;
		p->daddr[11] = 0xff;
		__builtin_memcpy(&p->saddr[12], &ip.saddr, 4);
		__builtin_memcpy(&p->daddr[12], &ip.daddr, 4);
		p->l4_off = off + hlen;
		p->ip_end = off + tot;
		return 0;
	}
	if (proto == ETH_P_IPV6) {
		struct ipv6hdr ip6;

		if (WS_LOAD(ctx, off, &ip6, sizeof(ip6)))
			return WS_STAT_MALFORMED;
		if (ip6.version != 6)
			return WS_STAT_MALFORMED;
		if (ip6.nexthdr != WS_IPPROTO_TCP && ip6.nexthdr != WS_IPPROTO_UDP)
			return WS_STAT_UNSUPPORTED;
		p->ip_version = 6;
		p->proto = ip6.nexthdr;
		__builtin_memcpy(p->saddr, &ip6.saddr, 16);
		__builtin_memcpy(p->daddr, &ip6.daddr, 16);
		p->l4_off = off + sizeof(ip6);
		/* payload_len 0 is a jumbogram / BIG TCP: runs to the end of the skb. */
		p->ip_end = ip6.payload_len ? p->l4_off + bpf_ntohs(ip6.payload_len) : WS_LEN(ctx);
		return 0;
	}
	if (proto == ETH_P_8021Q || proto == ETH_P_8021AD)
		return WS_STAT_UNSUPPORTED; /* a fourth tag */
	return WS_STAT_UNSUPPORTED;
}

static __always_inline void handle(WS_CTX *ctx, __u8 direction)
{
	struct parsed p = {};
	struct ws_flow_key key = {};
	struct ws_flow_val *val;
	struct ws_pkt_event *ev;
	__u32 payload_off, payload_len, seq = 0, ack = 0, avail, cap, from;
	__u16 sport, dport;
	__u8 tcp_flags = 0, side;
	int err;

	count(WS_STAT_SEEN);
	err = parse_l3(ctx, &p);
	if (err) {
		count(err);
		return;
	}

	if (p.proto == WS_IPPROTO_UDP) {
		struct udphdr udp;
		__u32 ulen;

		if (WS_LOAD(ctx, p.l4_off, &udp, sizeof(udp))) {
			count(WS_STAT_MALFORMED);
			return;
		}
		sport = bpf_ntohs(udp.source);
		dport = bpf_ntohs(udp.dest);
		ulen = bpf_ntohs(udp.len);
		payload_off = p.l4_off + sizeof(udp);
		if (ulen < sizeof(udp) || p.l4_off + ulen > p.ip_end) {
			count(WS_STAT_MALFORMED);
			return;
		}
		payload_len = ulen - sizeof(udp);
	} else {
		struct tcphdr tcp;
		__u32 doff;

		if (WS_LOAD(ctx, p.l4_off, &tcp, sizeof(tcp))) {
			count(WS_STAT_MALFORMED);
			return;
		}
		sport = bpf_ntohs(tcp.source);
		dport = bpf_ntohs(tcp.dest);
		doff = tcp.doff * 4;
		payload_off = p.l4_off + doff;
		if (doff < sizeof(tcp) || payload_off > p.ip_end) {
			count(WS_STAT_MALFORMED);
			return;
		}
		payload_len = p.ip_end - payload_off;
		seq = bpf_ntohl(tcp.seq);
		ack = bpf_ntohl(tcp.ack_seq);
		/* The flags byte follows doff/res1 (byte 13 of the header). */
		tcp_flags = ((__u8 *)&tcp)[13];
	}

	if (!port_configured(dport) && !port_configured(sport))
		return;
	key.proto = p.proto;
	__u16 vlan = p.n_vlan ? p.vlan[0] : WS_VLAN_NONE;

	key.port = dport;
	val = lookup_endpoint(&key, p.daddr, vlan);
	side = WS_SIDE_DST;
	if (!val || !(val->sides & WS_SIDE_DST)) {
		key.port = sport;
		val = lookup_endpoint(&key, p.saddr, vlan);
		side = WS_SIDE_SRC;
		if (!val || !(val->sides & WS_SIDE_SRC))
			return;
	}
	count(WS_STAT_MATCHED);

	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count(WS_STAT_RINGBUF_FULL);
		return;
	}

	WS_STAMP(ctx, ev);

	ev->flow_id = val->flow_id;
	ev->ifindex = WS_IFINDEX(ctx);
	ev->skb_len = WS_LEN(ctx);
	ev->tcp_seq = seq;
	ev->tcp_ack = ack;
	ev->gso_segs = WS_GSO_SEGS(ctx);
	ev->l4_payload_off = payload_off;
	ev->l4_payload_len = payload_len;
	ev->sport = sport;
	ev->dport = dport;
	ev->vlan[0] = p.vlan[0];
	ev->vlan[1] = p.vlan[1];
	ev->n_vlan = p.n_vlan;
	ev->direction = direction;
	ev->ip_version = p.ip_version;
	ev->proto = p.proto;
	ev->tcp_flags = tcp_flags;
	ev->match_side = side;
	__builtin_memcpy(ev->saddr, p.saddr, 16);
	__builtin_memcpy(ev->daddr, p.daddr, 16);

	/* Payload prefix: min(declared payload, bytes present in the skb, snap_len, WS_PAYLOAD_MAX); in
	 * snap_frame mode the same bytes preceded by the headers, from the Ethernet header. */
	cap = payload_len;
	avail = WS_LEN(ctx) > payload_off ? WS_LEN(ctx) - payload_off : 0;
	if (cap > avail)
		cap = avail;
	if (cap > snap_len)
		cap = snap_len;
	from = payload_off;
	if (snap_frame) {
		cap += payload_off;
		from = 0;
	}
	if (cap > WS_PAYLOAD_MAX)
		cap = WS_PAYLOAD_MAX;
	if (cap > 0) {
		/* Same value (cap is 1..=256 here), in a form the verifier can bound: 1..=WS_PAYLOAD_MAX. */
		__u32 n = ((cap - 1) & (WS_PAYLOAD_MAX - 1)) + 1;

		barrier_var(n);
		if (WS_LOAD_VAR(ctx, from, ev->payload, n))
			cap = 0;
	}
	ev->cap_len = cap;
	ev->cap_off = from;
	ev->offloaded_tci = WS_OFFLOADED_TCI(ctx);

	bpf_ringbuf_submit(ev, ws_wake_flags(&events, wake_bytes, sizeof(*ev)));
}

#endif /* WIRESTAMP_CAPTURE_H */
