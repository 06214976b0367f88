"""Development support shared by tests/ and scripts/: the service started locally (one node or a cluster of
several), a job client, test media, WER, percentiles and small loopback servers. Neither tests/ nor scripts/
imports the other; both import this. Product code (serve_app, deployments, stt_cli) never imports it."""
