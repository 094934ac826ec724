//! tc egress of the PEP's sender-facing interfaces: lowers the TCP receive window of controlled flows.
// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * StarPEP-WG receive-window rewriter (the eBPF back-end of the window controller).
 *
 * Attached with TCX on egress of the interface(s) facing the data sender. For every outgoing
 * TCP segment whose 4-tuple (source = the PEP's local socket, destination = the sender) has an
 * entry in STARPEP_WINDOWS, the 16-bit window field becomes
 *     min(original, max(1, min(0xffff, W >> rcv_wscale)))
 * i.e. the window is only ever lowered and never set to 0 by us. SYN and RST segments are
 * left alone (SYN windows are unscaled). The TCP checksum is updated incrementally.
 *
 * Parsing uses bpf_skb_load_bytes only (works on non-linear skbs and keeps the verifier
 * simple). The Rust model in ../model.rs mirrors this file decision for decision; change both.
 *
 * Not handled (segment passes untouched): IPv4 fragments, IPv6 extension headers, more than
 * one VLAN tag. Always returns TC_ACT_OK: this program never drops.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define ETH_HLEN 14
#define VLAN_HLEN 4
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8
#define PROTO_TCP 6
#define TCP_FLAG_SYN 0x02
#define TCP_FLAG_RST 0x04
#define TCP_OFF_WINDOW 14
#define TCP_OFF_CSUM 16
#define MAX_WSCALE 14

/* Map key: the 4-tuple as it appears in the OUTGOING segment. Keep in sync with sys.rs. */
struct flow_key {
	__u8 family;   /* 4 or 6 */
	__u8 pad[3];   /* always 0 */
	__u8 saddr[16]; /* IPv4: first 4 bytes, rest 0 */
	__u8 daddr[16];
	__be16 sport;  /* network byte order, as on the wire */
	__be16 dport;
};

/* Map value. Keep in sync with sys.rs. */
struct flow_window {
	__u32 window;     /* W in bytes */
	__u8 rcv_wscale;  /* the flow's receive window scale (TCP_INFO tcpi_rcv_wscale) */
	__u8 pad[3];
	__u64 seen;       /* segments of this flow seen (including SYN/RST) */
	__u64 rewritten;  /* segments whose window was lowered */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, struct flow_window);
} STARPEP_WINDOWS SEC(".maps");

/* The window to write: the original if it is already at or below the limit. */
static __always_inline __u16 limited_window(__u16 orig, const struct flow_window *fw)
{
	__u32 ws = fw->rcv_wscale;
	__u32 limit;

	if (ws > MAX_WSCALE)
		ws = MAX_WSCALE;
	limit = fw->window >> ws;
	if (limit > 0xffff)
		limit = 0xffff;
	if (limit == 0)
		limit = 1;
	return orig <= limit ? orig : (__u16)limit;
}

/* l3_off: offset of the IP header; want_version: 4 or 6 from the ethertype, 0 = any. */
static __always_inline int handle_ip(struct __sk_buff *skb, __u32 l3_off, __u8 want_version)
{
	struct flow_key key = {};
	struct flow_window *fw;
	__u8 tcp[20];
	__u8 first;
	__u32 l4_off;
	__u16 orig, lowered;
	__be16 old_be, new_be;

	if (bpf_skb_load_bytes(skb, l3_off, &first, 1) < 0)
		return TC_ACT_OK;
	if (want_version != 0 && (first >> 4) != want_version)
		return TC_ACT_OK;

	if ((first >> 4) == 4) {
		__u8 ip[20];
		__u32 ihl;

		if (bpf_skb_load_bytes(skb, l3_off, ip, sizeof(ip)) < 0)
			return TC_ACT_OK;
		ihl = ip[0] & 0x0f;
		if (ihl < 5)
			return TC_ACT_OK;
		/* MF flag or a fragment offset: skip every fragment. */
		if ((ip[6] & 0x3f) != 0 || ip[7] != 0)
			return TC_ACT_OK;
		if (ip[9] != PROTO_TCP)
			return TC_ACT_OK;
		key.family = 4;
		__builtin_memcpy(key.saddr, &ip[12], 4);
		__builtin_memcpy(key.daddr, &ip[16], 4);
		l4_off = l3_off + ihl * 4;
	} else if ((first >> 4) == 6) {
		__u8 ip6[40];

		if (bpf_skb_load_bytes(skb, l3_off, ip6, sizeof(ip6)) < 0)
			return TC_ACT_OK;
		/* Only TCP directly after the fixed header; extension headers are skipped. */
		if (ip6[6] != PROTO_TCP)
			return TC_ACT_OK;
		key.family = 6;
		__builtin_memcpy(key.saddr, &ip6[8], 16);
		__builtin_memcpy(key.daddr, &ip6[24], 16);
		l4_off = l3_off + 40;
	} else {
		return TC_ACT_OK;
	}

	if (bpf_skb_load_bytes(skb, l4_off, tcp, sizeof(tcp)) < 0)
		return TC_ACT_OK;
	__builtin_memcpy(&key.sport, &tcp[0], 2);
	__builtin_memcpy(&key.dport, &tcp[2], 2);

	fw = bpf_map_lookup_elem(&STARPEP_WINDOWS, &key);
	if (!fw)
		return TC_ACT_OK;
	__sync_fetch_and_add(&fw->seen, 1);

	if (tcp[13] & (TCP_FLAG_SYN | TCP_FLAG_RST))
		return TC_ACT_OK;

	orig = ((__u16)tcp[TCP_OFF_WINDOW] << 8) | tcp[TCP_OFF_WINDOW + 1];
	lowered = limited_window(orig, fw);
	if (lowered == orig)
		return TC_ACT_OK;

	old_be = bpf_htons(orig);
	new_be = bpf_htons(lowered);
	/* No BPF_F_PSEUDO_HDR: the window is not part of the pseudo header. For CHECKSUM_PARTIAL
	 * (locally generated, offloaded) the helper leaves the field alone and the final sum is
	 * computed over the new bytes; for complete checksums it applies RFC 1624. */
	if (bpf_l4_csum_replace(skb, l4_off + TCP_OFF_CSUM, old_be, new_be, 2) < 0)
		return TC_ACT_OK;
	if (bpf_skb_store_bytes(skb, l4_off + TCP_OFF_WINDOW, &new_be, 2, 0) < 0) {
		/* Undo the checksum change so the segment stays valid with its old window. */
		bpf_l4_csum_replace(skb, l4_off + TCP_OFF_CSUM, new_be, old_be, 2);
		return TC_ACT_OK;
	}
	__sync_fetch_and_add(&fw->rewritten, 1);
	return TC_ACT_OK;
}

/* Ethernet devices (veth): Ethernet header, optionally one 802.1Q/802.1ad tag. */
SEC("classifier")
int starpep_window_eth(struct __sk_buff *skb)
{
	__be16 proto;
	__u32 off = ETH_HLEN;

	if (bpf_skb_load_bytes(skb, 12, &proto, 2) < 0)
		return TC_ACT_OK;
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		if (bpf_skb_load_bytes(skb, 16, &proto, 2) < 0)
			return TC_ACT_OK;
		off += VLAN_HLEN;
	}
	if (proto == bpf_htons(ETH_P_IP))
		return handle_ip(skb, off, 4);
	if (proto == bpf_htons(ETH_P_IPV6))
		return handle_ip(skb, off, 6);
	return TC_ACT_OK;
}

/* L3 devices (TUN, ARPHRD_NONE): the packet starts with the IP header. */
SEC("classifier")
int starpep_window_l3(struct __sk_buff *skb)
{
	return handle_ip(skb, 0, 0);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
