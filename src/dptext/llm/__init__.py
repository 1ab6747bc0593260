"""dptext.llm"""
