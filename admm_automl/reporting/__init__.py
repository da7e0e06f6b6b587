"""What a run shows a person: the run directory (:mod:`.rundir`), the plots (:mod:`.plots`), the
HTML/Markdown report (:mod:`.report`) and the live progress display (:mod:`.progress`). Given
what they need; they import neither the estimator nor the configuration."""
