.PHONY: setup demo synthetic test lint bench chromium
PY := .venv/bin/python

.venv/.setup-done: pyproject.toml requirements-data.txt requirements-llm-models.txt scripts/setup.sh
	bash scripts/setup.sh
	touch $@

setup: .venv/.setup-done

demo: setup
	.venv/bin/dptext keyphrases --input demo:bbc-news/train --text-column text --label-column label \
	  --epsilon-vocab 1 --epsilon-kde 5 --sequences-per-class 200 --length 10 \
	  --method iterative --out out/sequences.jsonl

synthetic: setup
	$(PY) -m dptext generate --input demo:bbc-news/train --label-column label \
	  --document-type "news article" --epsilon-vocab 1 --epsilon-kde 5 \
	  --sequences-per-class 2 --out out/synthetic.jsonl

chromium:
	@[ -x /usr/bin/chromium ] || bash scripts/install-chromium.sh

test: setup chromium
	$(PY) -m pytest -q

lint: setup
	$(PY) -m ruff check src tests benchmarks
