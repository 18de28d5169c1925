/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every struct and constant shared between wirestamp's BPF programs and user space, in one place.
 * Include after vmlinux.h. The Rust side gets these types from the skeleton's BTF (`skel::*::types`)
 * and checks their size at compile time, so a change here that Rust does not follow fails the build.
 *
 * Byte order: addresses are kept as on the wire (network order); ports, VLAN ids and TCP sequence
 * numbers are converted to host order by the program.
 */
#ifndef WIRESTAMP_EVENTS_H
#define WIRESTAMP_EVENTS_H

/* Ring submit flags for a `size`-byte record just reserved in `ring`, for a program whose rodata
 * `wake_bytes` is `wake`. 0 keeps the kernel's default (wake the reader for each record that finds it
 * caught up). Else only the record that takes the unconsumed bytes (BPF_RB_AVAIL_DATA, this record
 * included) across `wake` wakes it: a wakeup (irq_work, a self-interrupt on the CPU running the app's
 * packet, then the reader scheduled) for every record over the threshold would tax each one while the
 * reader catches up. Records of two CPUs can both miss the crossing; the reader's timer
 * (TcOptions::drain_interval) bounds the wait then, as it does below the threshold. A ring record is the
 * sample rounded up to 8 bytes plus an 8-byte header. */
static __always_inline __u64 ws_wake_flags(void *ring, __u32 wake, __u64 size)
{
	__u64 avail, rec = ((size + 7) & ~7ULL) + 8;

	if (!wake)
		return 0;
	avail = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA);
	return avail >= wake && avail - rec < wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* Largest payload prefix a record can carry; the loader's snap length is clamped to it. */
#define WS_PAYLOAD_MAX 256

/* ws_flow_key.vlan: a VLAN id (1..4094), or one of these. */
#define WS_VLAN_NONE 0      /* untagged (a priority tag, VID 0, counts as untagged) */
#define WS_VLAN_ANY 0xffff  /* tagged or not, any id */

/* rodata lookup_mask: which key shapes exist in the flow map, so a packet costs only the lookups that
 * can hit. Set by the loader from the configured flows. */
#define WS_LK_EXACT 1         /* packet's VLAN, packet's address */
#define WS_LK_ANY_ADDR 2      /* packet's VLAN, any address */
#define WS_LK_ANY_VLAN 4      /* any VLAN, packet's address */
#define WS_LK_ANY_BOTH 8      /* any VLAN, any address */

/* ws_flow_val.sides: which endpoint of a packet the key may match. */
#define WS_SIDE_DST 1 /* the packet goes to the configured endpoint (market-data group, order gateway) */
#define WS_SIDE_SRC 2 /* the packet comes from it (the gateway's replies) */

/* Key of the `flows` hash map: one configured endpoint. */
struct ws_flow_key {
	__u8 addr[16]; /* IPv6, or IPv4-mapped ::ffff:a.b.c.d; all zero = any address */
	__u16 port;    /* host order */
	__u16 vlan;    /* outermost VLAN id, WS_VLAN_NONE or WS_VLAN_ANY */
	__u8 proto;    /* IPPROTO_UDP (17) or IPPROTO_TCP (6) */
	__u8 pad[3];   /* must be zero: part of the hashed key */
};

struct ws_flow_val {
	__u32 flow_id; /* caller's id, copied into each record */
	__u8 sides;    /* WS_SIDE_* */
	__u8 pad[3];
};

/* ws_pkt_event.ts_source: where ts_ns came from. */
enum ws_ts_source {
	WS_TS_HW = 1,           /* skb hardware timestamp (NIC clock, as the driver reported it) */
	WS_TS_SKB_REALTIME = 2, /* skb->tstamp, tstamp_type REALTIME: the kernel's receive stamp */
	WS_TS_SKB_TAI = 3,      /* skb->tstamp, tstamp_type TAI */
	WS_TS_HOOK_TAI = 4,     /* no usable skb (or XDP hardware) stamp: bpf_ktime_get_tai_ns() at the hook. A MONOTONIC
				 * skb->tstamp is TCP's earliest departure time (a schedule, carried
				 * across veth into the peer's ingress), not an observation, so it also
				 * lands here; the raw value stays in skb_tstamp. */
};

/* ws_pkt_event.direction */
enum ws_direction {
	WS_DIR_INGRESS = 1,
	WS_DIR_EGRESS = 2,
};

/* Indexes of the per-CPU `stats` array. */
enum ws_stat {
	WS_STAT_SEEN = 0,         /* packets the program ran on */
	WS_STAT_MATCHED = 1,      /* packets of a configured flow (records written + RINGBUF_FULL) */
	WS_STAT_RINGBUF_FULL = 2, /* matched, but the ring had no room: the record is lost */
	WS_STAT_MALFORMED = 3,    /* header shorter than declared, or fields out of range */
	WS_STAT_UNSUPPORTED = 4,  /* not IPv4/IPv6 + UDP/TCP, more than 3 VLAN tags, IPv6 extension headers */
	WS_STAT_FRAGMENT = 5,     /* IPv4 non-first fragment: no L4 header to match on */
	WS_STAT_NO_HW_RX = 6,     /* XDP: matched, but the driver gave no RX hardware timestamp */
	WS_STAT__MAX = 7,
};

/* One ring-buffer record per matched packet. Fixed size (ring reservations must be); only
 * payload[0..cap_len] is meaningful. With rodata snap_frame = 0 (the default) payload[] holds the first
 * snap_len bytes of the L4 payload; with snap_frame = 1 it holds the frame from its Ethernet header up to
 * snap_len bytes of L4 payload (headers included, at most WS_PAYLOAD_MAX), for a pcapng writer. */
struct ws_pkt_event {
	__u64 ts_ns;        /* the chosen timestamp, clock given by ts_source */
	__u64 hook_tai_ns;  /* bpf_ktime_get_tai_ns() when the program ran, always set */
	__u64 skb_tstamp;   /* raw skb->tstamp (clock per tstamp_type), 0 if none */
	__u64 skb_hwtstamp; /* raw skb hardware timestamp, 0 if none */
	__u32 flow_id;
	__u32 ifindex;      /* interface the hook is attached to */
	__u32 skb_len;      /* bytes in the skb from the Ethernet header (a GSO skb holds several segments) */
	__u32 tcp_seq;      /* host order; 0 for UDP */
	__u32 tcp_ack;
	__u16 gso_segs;     /* wire segments this skb becomes (0 or 1: one packet) */
	__u16 l4_payload_off;  /* offset of the L4 payload from the Ethernet header */
	__u16 l4_payload_len;  /* L4 payload length as the IP/UDP headers declare it */
	__u16 cap_len;      /* bytes of payload[] filled */
	__u16 sport;        /* host order */
	__u16 dport;
	__u16 vlan[2];      /* outermost first; VLAN ids (TCI & 0xfff) */
	__u8 n_vlan;        /* tags seen, including an offloaded one; vlan[] holds the first two */
	__u8 ts_source;     /* enum ws_ts_source */
	__u8 tstamp_type;   /* raw skb->tstamp_type: 0 REALTIME, 1 MONOTONIC, 2 TAI */
	__u8 direction;     /* enum ws_direction */
	__u8 ip_version;    /* 4 or 6 */
	__u8 proto;         /* 6 TCP, 17 UDP */
	__u8 tcp_flags;     /* FIN 0x01 SYN 0x02 RST 0x04 PSH 0x08 ACK 0x10 URG 0x20 ... */
	__u8 match_side;    /* WS_SIDE_DST or WS_SIDE_SRC: which endpoint matched */
	__u8 saddr[16];     /* IPv6 or IPv4-mapped, network order */
	__u8 daddr[16];
	__u16 cap_off;      /* offset of payload[0] from the Ethernet header: l4_payload_off, or 0 (snap_frame) */
	__u16 offloaded_tci; /* tc: the full TCI of a VLAN tag the stack took out of the data (vlan_present), else 0 */
	/* Last, so a record writes (and its reader reads) only the cache lines up to payload[cap_len]. */
	__u8 payload[WS_PAYLOAD_MAX]; /* captured bytes: the L4 payload prefix, or (snap_frame) the frame prefix */
};

/* ---- sockops TX timestamping (sockops.bpf.c), kernel 6.15+ ---- */

/* ws_tx_event.kind */
enum ws_tx_kind {
	WS_TX_ESTABLISHED = 1, /* a configured connection was enabled; seq = snd_nxt (ISN + 1) */
	WS_TX_SCHED = 2,       /* the write's last byte entered the qdisc layer */
	WS_TX_SND_SW = 3,      /* ... was handed to the driver (software stamp) */
	WS_TX_SND_HW = 4,      /* ... left the NIC (hardware stamp) */
	WS_TX_ACK = 5,         /* ... was acknowledged by the peer */
};

/* Indexes of the per-CPU `tx_stats` array. */
enum ws_tx_stat {
	WS_TX_STAT_ENABLED = 0,          /* connections with TX timestamping turned on */
	WS_TX_STAT_SETSOCKOPT_FAILED = 1,/* bpf_setsockopt(SK_BPF_CB_FLAGS) refused: kernel older than 6.15 */
	WS_TX_STAT_NO_KFUNC = 2,         /* bpf_sock_ops_enable_tx_tstamp missing: kernel older than 6.15 */
	WS_TX_STAT_RINGBUF_FULL = 3,     /* events lost: the ring had no room */
	WS_TX_STAT__MAX = 4,
};

/* One ring-buffer record per callback of a configured connection. */
struct ws_tx_event {
	__u64 ts_ns;       /* SND_HW: the skb hardware stamp; else bpf_ktime_get_tai_ns() in the callback */
	__u64 sk_cookie;   /* bpf_get_socket_cookie(): identifies the socket */
	__u32 seq;         /* tskey: sequence number of the write's last byte; ESTABLISHED: snd_nxt */
	__u32 flow_id;
	__u16 local_port;  /* host order */
	__u16 remote_port; /* host order */
	__u8 kind;         /* enum ws_tx_kind */
	__u8 ip_version;   /* 4 or 6 */
	__u8 pad[2];
	__u8 local_addr[16]; /* IPv6 or IPv4-mapped, network order */
	__u8 remote_addr[16];
};

/* ---- AF_XDP capture port (xsk.bpf.c) ---- */

#define WS_XSK_META_MAGIC 0x314d5357 /* "WSM1" little-endian: the metadata area holds a ws_xsk_meta */

/* Written by ws_xsk_rx into the XDP metadata area, immediately before the frame; the kernel copies it
 * with the frame into the socket's UMEM chunk (copy mode), so user space finds it at desc.addr - 24. */
struct ws_xsk_meta {
	__u64 rx_hw_ns;    /* the NIC's RX timestamp (bpf_xdp_metadata_rx_timestamp); 0 = none (veth) */
	__u64 hook_tai_ns; /* bpf_ktime_get_tai_ns() when the program ran */
	__u32 rx_queue;    /* ctx->rx_queue_index */
	__u32 magic;       /* WS_XSK_META_MAGIC */
};

/* Indexes of the per-CPU `xsk_stats` array. */
enum ws_xsk_stat {
	WS_XSK_STAT_SEEN = 0,       /* frames the program ran on */
	WS_XSK_STAT_REDIRECTED = 1, /* handed to the queue's socket (XDP_REDIRECT) */
	WS_XSK_STAT_NO_SOCKET = 2,  /* no socket on the frame's queue: passed to the stack */
	WS_XSK_STAT_NO_META = 3,    /* no room for the metadata (bpf_xdp_adjust_meta failed): sent without it */
	WS_XSK_STAT_NO_HW_RX = 4,   /* the driver gave no RX hardware timestamp (veth: all) */
	WS_XSK_STAT__MAX = 5,
};

#endif /* WIRESTAMP_EVENTS_H */
