// SPDX-License-Identifier: Apache-2.0
/*
 * AF_XDP capture port: every frame received on the interface is redirected to the AF_XDP socket bound to
 * its RX queue (`xsks`, an XSKMAP indexed by queue), with a ws_xsk_meta (events.h) in the XDP metadata
 * area in front of it: the NIC's RX hardware timestamp where the driver gives one (device-bound program,
 * kfunc bpf_xdp_metadata_rx_timestamp; veth answers 0 = none) and the program's own TAI time. A queue
 * without a socket passes its frames to the stack (XDP_PASS). Meant for a port fed by a tap, whose
 * frames exist only to be measured: redirected frames do not reach the stack.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"

char LICENSE[] SEC("license") = "GPL";

extern int bpf_xdp_metadata_rx_timestamp(const struct xdp_md *ctx, __u64 *timestamp) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WS_XSK_STAT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} xsk_stats SEC(".maps");

/* Emit the shared types into BTF so the skeleton carries them for Rust. */
struct ws_xsk_meta _ws_xsk_meta = {};
enum ws_xsk_stat _ws_xsk_stat = WS_XSK_STAT_SEEN;

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&xsk_stats, &which);

	if (c)
		*c += 1;
}

SEC("xdp")
int ws_xsk_rx(struct xdp_md *ctx)
{
	struct ws_xsk_meta *meta;
	__u64 hw = 0;
	long act;

	count(WS_XSK_STAT_SEEN);
	if (bpf_xdp_metadata_rx_timestamp(ctx, &hw) != 0)
		hw = 0;
	if (!hw)
		count(WS_XSK_STAT_NO_HW_RX);
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct ws_xsk_meta)) == 0) {
		meta = (void *)(long)ctx->data_meta;
		if ((void *)(meta + 1) <= (void *)(long)ctx->data) {
			meta->rx_hw_ns = hw;
			meta->hook_tai_ns = bpf_ktime_get_tai_ns();
			meta->rx_queue = ctx->rx_queue_index;
			meta->magic = WS_XSK_META_MAGIC;
		} else {
			count(WS_XSK_STAT_NO_META);
		}
	} else {
		count(WS_XSK_STAT_NO_META);
	}
	act = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
	count(act == XDP_REDIRECT ? WS_XSK_STAT_REDIRECTED : WS_XSK_STAT_NO_SOCKET);
	return act;
}
