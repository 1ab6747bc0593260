"""dptext.embed"""
