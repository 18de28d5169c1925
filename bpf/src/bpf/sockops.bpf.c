// SPDX-License-Identifier: Apache-2.0
/*
 * Transparent TX timestamps for TCP order sessions, through BPF sockops timestamping (Linux 6.15+).
 *
 * Attached to the trading app's cgroup (v2). When a connection to a configured endpoint is established
 * (`flows`, the remote endpoint looked up as destination, any VLAN), the program turns on
 * SK_BPF_CB_TX_TIMESTAMPING for the socket; on each write (SENDMSG callback) it asks the kernel to stamp
 * it (bpf_sock_ops_enable_tx_tstamp), and the kernel then calls back at SCHED, SND (software or hardware)
 * and ACK of the write's last byte. Each callback becomes a ws_tx_event in the `tx_events` ring, with the
 * byte's sequence number (tskey). The application's socket is untouched: no SO_TIMESTAMPING, nothing
 * on its error queue.
 *
 *   write() ── SENDMSG_CB ── enable ─▶ SCHED_CB ─▶ SND_SW_CB / SND_HW_CB ─▶ ACK_CB
 *                                        │              │                     │
 *                                        └──────── ws_tx_event {kind, ts, tskey} ──▶ tx_events
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "events.h"

#define WS_SOL_SOCKET 1
#define WS_IPPROTO_TCP 6
#define WS_AF_INET 2
#define WS_AF_INET6 10

char LICENSE[] SEC("license") = "GPL";

extern int bpf_sock_ops_enable_tx_tstamp(struct bpf_sock_ops_kern *skops, u64 flags) __ksym __weak;
extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct ws_flow_key);
	__type(value, struct ws_flow_val);
} tx_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} tx_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WS_TX_STAT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} tx_stats SEC(".maps");

/* Per-socket state: the flow id of an enabled connection. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} tx_socks SEC(".maps");

/* Wake the reader only once this many bytes of events wait (0: for each event that finds it caught up):
 * SENDMSG and SCHED run in the app's send() and a wakeup there is an irq_work self-interrupt on its CPU.
 * Set by the loader; the reader also drains on a 1 ms timer (capture.h, wake_bytes). */
const volatile __u32 wake_bytes = 0;

struct ws_tx_event _ws_tx_event = {};
enum ws_tx_kind _ws_tx_kind = WS_TX_ESTABLISHED;
enum ws_tx_stat _ws_tx_stat = WS_TX_STAT_ENABLED;

static __always_inline void tx_count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&tx_stats, &which);

	if (c)
		*c += 1;
}

static __always_inline int addrs(struct bpf_sock_ops *skops, __u8 local[16], __u8 remote[16])
{
	if (skops->family == WS_AF_INET) {
		__u32 l = skops->local_ip4, r = skops->remote_ip4;

		local[10] = local[11] = remote[10] = remote[11] = 0xff;
		__builtin_memcpy(&local[12], &l, 4);
		__builtin_memcpy(&remote[12], &r, 4);
		return 4;
	}
	if (skops->family == WS_AF_INET6) {
		__u32 l[4] = { skops->local_ip6[0], skops->local_ip6[1], skops->local_ip6[2], skops->local_ip6[3] };
		__u32 r[4] = { skops->remote_ip6[0], skops->remote_ip6[1], skops->remote_ip6[2], skops->remote_ip6[3] };

		__builtin_memcpy(local, l, 16);
		__builtin_memcpy(remote, r, 16);
		return 6;
	}
	return 0;
}

static __always_inline void emit(struct bpf_sock_ops *skops, __u32 flow_id, __u8 kind, __u32 seq, __u64 ts)
{
	struct ws_tx_event *ev = bpf_ringbuf_reserve(&tx_events, sizeof(*ev), 0);

	if (!ev) {
		tx_count(WS_TX_STAT_RINGBUF_FULL);
		return;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->ts_ns = ts;
	ev->sk_cookie = bpf_get_socket_cookie(skops);
	ev->seq = seq;
	ev->flow_id = flow_id;
	ev->local_port = skops->local_port;
	ev->remote_port = bpf_ntohl(skops->remote_port); /* network-order port in the upper 16 bits: ntohl yields it */
	ev->kind = kind;
	ev->ip_version = addrs(skops, ev->local_addr, ev->remote_addr);
	bpf_ringbuf_submit(ev, ws_wake_flags(&tx_events, wake_bytes, sizeof(*ev)));
}

static __always_inline struct ws_flow_val *lookup_remote(struct bpf_sock_ops *skops)
{
	struct ws_flow_key key = {};
	__u8 local[16] = {};
	struct ws_flow_val *v;

	if (!addrs(skops, local, key.addr))
		return NULL;
	key.proto = WS_IPPROTO_TCP;
	key.port = bpf_ntohl(skops->remote_port); /* network-order port in the upper 16 bits: ntohl yields it */
	key.vlan = WS_VLAN_ANY; /* no VLAN at the socket layer: VLAN-specific flows do not apply here */
	v = bpf_map_lookup_elem(&tx_flows, &key);
	if (v)
		return v;
	__builtin_memset(key.addr, 0, 16);
	return bpf_map_lookup_elem(&tx_flows, &key);
}

/* The tskey of the skb a timestamp callback is about: the sequence number of the write's last byte. */
static __always_inline __u32 tskey_of(struct bpf_sock_ops *skops)
{
	struct bpf_sock_ops_kern *kctx = bpf_cast_to_kern_ctx(skops);
	struct sk_buff *skb = kctx->skb;
	struct skb_shared_info *shinfo;

	if (!skb)
		return 0;
	shinfo = bpf_core_cast(skb->head + skb->end, struct skb_shared_info);
	return shinfo->tskey;
}

static __always_inline __u64 hw_stamp_of(struct bpf_sock_ops *skops)
{
	struct bpf_sock_ops_kern *kctx = bpf_cast_to_kern_ctx(skops);
	struct sk_buff *skb = kctx->skb;
	struct skb_shared_info *shinfo;

	if (!skb)
		return 0;
	shinfo = bpf_core_cast(skb->head + skb->end, struct skb_shared_info);
	return shinfo->hwtstamps.hwtstamp;
}

SEC("sockops")
int ws_sockops(struct bpf_sock_ops *skops)
{
	struct ws_flow_val *val;
	struct bpf_sock *sk;
	__u32 *flow, kind, id;
	int flags = SK_BPF_CB_TX_TIMESTAMPING;

	switch (skops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		val = lookup_remote(skops);
		if (!val || !(val->sides & WS_SIDE_DST))
			return 1;
		if (!bpf_ksym_exists(bpf_sock_ops_enable_tx_tstamp)) {
			tx_count(WS_TX_STAT_NO_KFUNC);
			return 1;
		}
		if (bpf_setsockopt(skops, WS_SOL_SOCKET, SK_BPF_CB_FLAGS, &flags, sizeof(flags))) {
			tx_count(WS_TX_STAT_SETSOCKOPT_FAILED);
			return 1;
		}
		/* One load of skops->sk, so the verifier sees the NULL check on the pointer passed on. */
		sk = skops->sk;
		if (!sk)
			return 1;
		id = val->flow_id;
		flow = bpf_sk_storage_get(&tx_socks, sk, &id, BPF_SK_STORAGE_GET_F_CREATE);
		if (!flow)
			return 1;
		tx_count(WS_TX_STAT_ENABLED);
		emit(skops, id, WS_TX_ESTABLISHED, skops->snd_nxt, bpf_ktime_get_tai_ns());
		return 1;
	case BPF_SOCK_OPS_TSTAMP_SENDMSG_CB:
		/* Without this call the kernel reports nothing for the write. */
		if (bpf_ksym_exists(bpf_sock_ops_enable_tx_tstamp))
			bpf_sock_ops_enable_tx_tstamp(bpf_cast_to_kern_ctx(skops), 0);
		return 1;
	case BPF_SOCK_OPS_TSTAMP_SCHED_CB:
		kind = WS_TX_SCHED;
		break;
	case BPF_SOCK_OPS_TSTAMP_SND_SW_CB:
		kind = WS_TX_SND_SW;
		break;
	case BPF_SOCK_OPS_TSTAMP_SND_HW_CB:
		kind = WS_TX_SND_HW;
		break;
	case BPF_SOCK_OPS_TSTAMP_ACK_CB:
		kind = WS_TX_ACK;
		break;
	default:
		return 1;
	}
	sk = skops->sk;
	if (!sk)
		return 1;
	flow = bpf_sk_storage_get(&tx_socks, sk, 0, 0);
	if (!flow)
		return 1;
	emit(skops, *flow, kind, tskey_of(skops),
	     kind == WS_TX_SND_HW ? hw_stamp_of(skops) : bpf_ktime_get_tai_ns());
	return 1;
}
