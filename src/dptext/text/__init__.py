"""dptext.text"""
