"""dptext.generators"""
