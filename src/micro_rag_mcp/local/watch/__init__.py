"""Following the data folder: the watcher that turns events (or polls) into refresh
passes (``watcher``) and the bookkeeping of what changed (``changes``)."""
