"""The trading day's routine: the after-close brief, the watchlist, alerts, push channels and
the schedule that runs them."""
