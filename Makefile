.PHONY: setup demo keyphrases test lint chromium docs
PY := .venv/bin/python

.venv/.setup-done: pyproject.toml scripts/setup.sh requirements-*.txt
	bash scripts/setup.sh
	touch $@

setup: .venv/.setup-done

# the main job: DP-KPS keyphrases + the default local LLM on the bundled BBC News corpus
demo: setup
	.venv/bin/dptext generate --input demo:bbc-news/train --label-column label \
	  --document-type "news article" --epsilon 6 --sequences-per-class 2 \
	  --out out/synthetic.jsonl

# the keyphrase engine alone (no LLM)
keyphrases: setup
	.venv/bin/dptext keyphrases --input demo:bbc-news/train --label-column label \
	  --epsilon 6 --sequences-per-class 200 --out out/sequences.jsonl

chromium:
	@[ -x /usr/bin/chromium ] || bash scripts/install-chromium.sh

# the documentation site (mkdocs.yml) into build/site; --strict: a broken link, a missing
# image or a page left out of the nav fails the build (and with it make test). Offline.
# Not --quiet: it hides the warnings from the counter that --strict aborts on.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# two pytest-xdist workers (CI has two cores; tests/xdist_workers.py gives each one thread
# and keeps the tests of a file, or of a shared fixture, on one worker);
# TEST_WORKERS=0 runs serially
TEST_WORKERS ?= 2
test: setup chromium docs
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

lint: setup
	$(PY) -m ruff check src tests benchmarks
