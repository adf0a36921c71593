"""Text analysis: chunking, CJK segmentation, stemming, what a vector is made of, anchors."""
