// SPDX-License-Identifier: Apache-2.0
/*
 * XDP device-bound capture of configured flows with the NIC's RX hardware timestamp.
 *
 * Same matching and record as the tc programs (capture.h), on the receive path before any skb exists;
 * the timestamp comes from the driver through the kfunc bpf_xdp_metadata_rx_timestamp, which needs a
 * device-bound program (loaded for one interface, BPF_F_XDP_DEV_BOUND_ONLY) attached in driver mode.
 * A driver without RX timestamps answers an error, and veth answers success with 0: both mean "none",
 * counted in WS_STAT_NO_HW_RX, and the record then carries the hook's own time (WS_TS_HOOK_TAI); use the
 * tc path's stamps for such interfaces. Always returns XDP_PASS.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "events.h"

char LICENSE[] SEC("license") = "GPL";

extern int bpf_xdp_metadata_rx_timestamp(const struct xdp_md *ctx, __u64 *timestamp) __ksym;

#define WS_CTX struct xdp_md
/* Headers straight from the linear part when they lie in it, else the helper (frags, short frames). */
#define WS_LOAD(ctx, off, to, n) ws_xdp_load(ctx, off, to, n)
#define WS_LOAD_VAR(ctx, off, to, n) bpf_xdp_load_bytes(ctx, off, to, n)
#define WS_LEN(ctx) bpf_xdp_get_buff_len(ctx)
#define WS_IFINDEX(ctx) ((ctx)->ingress_ifindex)
#define WS_GSO_SEGS(ctx) 0
/* A tag the NIC stripped would need bpf_xdp_metadata_rx_vlan_tag; not read (tags in the data are). */
#define WS_OFFLOADED_VLAN(ctx, p) do {} while (0)
#define WS_OFFLOADED_TCI(ctx) 0
#define WS_STAMP(ctx, ev) ws_xdp_stamp(ctx, ev)

static __always_inline void ws_xdp_stamp(struct xdp_md *ctx, struct ws_pkt_event *ev);

static __always_inline int ws_xdp_load(struct xdp_md *ctx, __u32 off, void *to, const __u32 n)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if (off < 0x1000) { /* always, for a header; bounds the offset for the verifier */
		void *p = data + off;

		if (p + n <= end) {
			__builtin_memcpy(to, p, n);
			return 0;
		}
	}
	return bpf_xdp_load_bytes(ctx, off, to, n);
}

#include "capture.h"

static __always_inline void ws_xdp_stamp(struct xdp_md *ctx, struct ws_pkt_event *ev)
{
	__u64 hw = 0;

	ev->hook_tai_ns = bpf_ktime_get_tai_ns();
	ev->skb_tstamp = 0;
	ev->tstamp_type = 0;
	if (bpf_xdp_metadata_rx_timestamp(ctx, &hw) == 0 && hw) {
		ev->skb_hwtstamp = hw;
		ev->ts_ns = hw;
		ev->ts_source = WS_TS_HW;
	} else {
		ev->skb_hwtstamp = 0;
		ev->ts_ns = ev->hook_tai_ns;
		ev->ts_source = WS_TS_HOOK_TAI;
		count(WS_STAT_NO_HW_RX);
	}
}

SEC("xdp.frags")
int ws_xdp_rx(struct xdp_md *ctx)
{
	handle(ctx, WS_DIR_INGRESS);
	return XDP_PASS;
}
