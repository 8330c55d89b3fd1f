/* bpf_filter_pcap 'EXPR' FILE.pcap
 *
 * Compiles a pcap-filter expression for the capture's link type and snapshot length
 * through pktpath's C API (userland acceptance, as libpcap filters offline files), runs it
 * on every packet of the capture and prints one decimal return value per packet, one per
 * line -- what `pktpath bpf run --expr EXPR --pcap FILE` prints.
 *
 * Build against an installed pktpath:
 *     cc -o bpf_filter_pcap bpf_filter_pcap.c $(pkg-config --cflags --libs pktpath libpcap)
 *
 * Exit status: 0 done, 1 error (a message on stderr), 2 usage.
 */
#include <pcap/pcap.h>
#include <pktpath/bpf.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s 'EXPR' FILE.pcap\n", argv[0]);
    return 2;
  }
  const char *expr = argv[1], *path = argv[2];

  char ebuf[PCAP_ERRBUF_SIZE] = {0};
  pcap_t *cap = pcap_open_offline(path, ebuf);
  if (cap == NULL) {
    fprintf(stderr, "bpf_filter_pcap: %s: %s\n", path, ebuf);
    return 1;
  }
  int linktype = pcap_datalink(cap);

  char err[PKTPATH_BPF_ERRBUF_SIZE];
  pktpath_bpf *prog = pktpath_bpf_compile(expr, linktype, pcap_snapshot(cap), 1, PKTPATH_BPF_NETMASK_UNKNOWN,
                                          PKTPATH_BPF_USERLAND, PKTPATH_BPF_ENGINE_DEFAULT, err, sizeof err);
  if (prog == NULL) {
    fprintf(stderr, "bpf_filter_pcap: %s\n", err);
    pcap_close(cap);
    return 1;
  }

  /* A replayed packet arrives on a device, as `pktpath bpf run` replays it: ifindex 1,
   * ARPHRD_ETHER for Ethernet captures (ARPHRD_NONE otherwise), the protocol from the
   * Ethernet type field, the network header after the link header. */
  struct pktpath_bpf_meta meta;
  pktpath_bpf_meta_init(&meta);
  meta.has_dev = 1;
  meta.ifindex = 1;
  meta.hatype = linktype == DLT_EN10MB ? 1 : 0xfffe;
  if (linktype != DLT_EN10MB) meta.net_off = 0;

  struct pcap_pkthdr *h;
  const unsigned char *data;
  int rc;
  while ((rc = pcap_next_ex(cap, &h, &data)) == 1) {
    unsigned int wirelen = h->len < h->caplen ? h->caplen : h->len;
    if (linktype == DLT_EN10MB) {
      meta.protocol = 0;
      meta.net_off = h->caplen < 14 ? h->caplen : 14;
      if (h->caplen >= 14) memcpy(&meta.protocol, data + 12, 2); /* network order, as skb->protocol */
    }
    printf("%u\n", (unsigned int)pktpath_bpf_run(prog, data, wirelen, h->caplen, &meta));
  }
  int status = 0;
  if (rc == PCAP_ERROR) {
    fprintf(stderr, "bpf_filter_pcap: %s: %s\n", path, pcap_geterr(cap));
    status = 1;
  }
  pktpath_bpf_free(prog);
  pcap_close(cap);
  if (fflush(stdout) != 0) {
    perror("bpf_filter_pcap: stdout");
    status = 1;
  }
  return status;
}
