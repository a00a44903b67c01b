"""local"""
