"""fireval.formats"""
