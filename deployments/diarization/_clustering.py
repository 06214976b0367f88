"""Speaker clustering that counts: agglomerative clustering of the segmentation windows' speaker embeddings,
cut at a distance threshold, and cut at exactly the count a client gives (or within its bounds).

pyannote's `AgglomerativeClustering` drops every cluster of fewer than `min_cluster_size` (12) embeddings
into the nearest large one. On short excerpts (a 30 s file has about 60 local-speaker embeddings, a 10 s
window per second), a speaker who talks for a few seconds never reaches 12, so they vanish, and with a
given count the dendrogram is searched for a cut with that many *large* clusters, which splits the main
speakers instead (issue 35: `num_speakers` made 7 of 12 AMI excerpts worse).

Here the dendrogram (average linkage, Euclidean distance between L2-normalised embeddings) is cut once:
- without a count, at the threshold; clusters smaller than `min_cluster_size` (small, 2 by default: one
  embedding alone is as likely an outlier as a speaker) are re-assigned to the nearest other cluster;
- with a count (or when the threshold's count falls outside [min, max]), at the merge that leaves exactly
  that many clusters: the clusters the threshold found are kept, and the extra ones are the last merges
  undone, i.e. the groups of embeddings most unlike the others, however small (the speakers who said
  least); too many are merged the same way. The threshold's clustering, when it already has the count,
  is the answer, so a right count given changes nothing.
"""

from typing import Any

import numpy as np
from pyannote.audio.pipelines.clustering import BaseClustering
from scipy.cluster.hierarchy import fcluster, linkage

LINKAGE = "average"
"""Average linkage: its merge distances never decrease (centroid linkage's can), so cutting the dendrogram
at a distance and at a count agree, and every count from 1 to the number of embeddings has its cut."""


class CountingClustering(BaseClustering):
    """A `BaseClustering` for pyannote's `SpeakerDiarization` (which calls `cluster` through
    `BaseClustering.__call__`, then assigns every embedding to the nearest cluster centroid)."""

    def __init__(self, threshold: float, min_cluster_size: int = 2, min_active_ratio: float = 0.2) -> None:
        super().__init__(metric="cosine")
        self.threshold = threshold
        self.min_cluster_size = min_cluster_size
        self.min_active_ratio = min_active_ratio

    def filter_embeddings(  # the same call as pyannote's, the ratio ours
        self, embeddings: np.ndarray, segmentations: Any = None, min_active_ratio: float | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ratio = self.min_active_ratio if min_active_ratio is None else min_active_ratio
        return super().filter_embeddings(embeddings, segmentations=segmentations, min_active_ratio=ratio)

    def cluster(
        self,
        embeddings: np.ndarray,
        min_clusters: int,
        max_clusters: int,
        num_clusters: int | None = None,
    ) -> np.ndarray:
        """(embeddings,) cluster indices 0..k-1."""
        return cluster_embeddings(
            embeddings,
            self.threshold,
            self.min_cluster_size,
            num_clusters or min_clusters,
            num_clusters or max_clusters,
        )


def cluster_embeddings(
    embeddings: np.ndarray, threshold: float, min_cluster_size: int, min_clusters: int, max_clusters: int
) -> np.ndarray:
    """(embeddings,) cluster indices 0..k-1, with min_clusters <= k <= max_clusters whenever there are at
    least min_clusters embeddings."""
    count = len(embeddings)
    if count < 2:
        return np.zeros(count, dtype=int)
    normalised = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-9)
    dendrogram = linkage(normalised, method=LINKAGE, metric="euclidean")
    clusters = fcluster(dendrogram, threshold, criterion="distance") - 1
    clusters = _without_small(normalised, clusters, min_cluster_size)
    found = len(np.unique(clusters))
    wanted = min(max(found, min_clusters), max_clusters, count)
    if wanted != found:
        clusters = fcluster(dendrogram, wanted, criterion="maxclust") - 1
    return _renumbered(clusters)


def _without_small(embeddings: np.ndarray, clusters: np.ndarray, min_size: int) -> np.ndarray:
    """Clusters of fewer than `min_size` embeddings joined to the nearest large cluster's centroid; all kept
    when none is large."""
    labels, sizes = np.unique(clusters, return_counts=True)
    large = labels[sizes >= min_size]
    if len(large) == 0 or len(large) == len(labels):
        return clusters
    centroids = np.stack([embeddings[clusters == label].mean(axis=0) for label in large])
    small = ~np.isin(clusters, large)
    clusters = clusters.copy()
    clusters[small] = large[(embeddings[small] @ centroids.T).argmax(axis=1)]
    return clusters


def _renumbered(clusters: np.ndarray) -> np.ndarray:
    return np.unique(clusters, return_inverse=True)[1]
